package pass

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"
)

const waitFor = 10 * time.Second

// fakePasser records when each pass started and ended; gate, when set, holds every
// pass until it is closed; passes fail when fail is set.
type fakePasser struct {
	mu     sync.Mutex
	starts []time.Time
	ends   []time.Time
	gate   chan struct{}
	fail   bool
}

func (f *fakePasser) Run(context.Context) (Summary, error) {
	f.mu.Lock()
	f.starts = append(f.starts, time.Now())
	gate, fail := f.gate, f.fail
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ends = append(f.ends, time.Now())
	if fail {
		return Summary{}, errors.New("boom")
	}
	return Summary{}, nil
}

func (f *fakePasser) counts() (started, ended int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts), len(f.ends)
}

func TestLoopRunsAtOnceThenEveryIntervalAfterThePass(t *testing.T) {
	p := &fakePasser{}
	const interval = 20 * time.Millisecond
	proc := ifrit.Invoke(NewLoop(p, interval, nil))
	t.Cleanup(func() { proc.Signal(os.Kill); <-proc.Wait() })

	require.Eventually(t, func() bool { n, _ := p.counts(); return n >= 4 }, waitFor, time.Millisecond)
	proc.Signal(syscall.SIGTERM)
	require.NoError(t, <-proc.Wait())

	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 1; i < len(p.starts); i++ {
		assert.GreaterOrEqual(t, p.starts[i].Sub(p.ends[i-1]), interval, "pass %d starts an interval after pass %d ended", i, i-1)
	}
}

func TestLoopKeepsGoingAfterFailedPasses(t *testing.T) {
	p := &fakePasser{fail: true}
	logs := &logLines{}
	proc := ifrit.Invoke(NewLoop(p, time.Millisecond, logs.logger()))
	t.Cleanup(func() { proc.Signal(os.Kill); <-proc.Wait() })

	require.Eventually(t, func() bool { n, _ := p.counts(); return n >= 3 }, waitFor, time.Millisecond)
	proc.Signal(syscall.SIGTERM)
	require.NoError(t, <-proc.Wait())
	failed := logs.messages(t, "converger-pass-failed")
	require.NotEmpty(t, failed)
	assert.Equal(t, "boom", failed[0]["error"])
}

func TestLoopStopsAfterThePassInProgress(t *testing.T) {
	p := &fakePasser{gate: make(chan struct{})}
	proc := ifrit.Invoke(NewLoop(p, time.Hour, nil))

	require.Eventually(t, func() bool { n, _ := p.counts(); return n == 1 }, waitFor, time.Millisecond)
	proc.Signal(syscall.SIGTERM)
	select {
	case err := <-proc.Wait():
		t.Fatalf("loop stopped during a pass: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(p.gate)
	select {
	case err := <-proc.Wait():
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("loop did not stop after the pass")
	}
	started, ended := p.counts()
	assert.Equal(t, 1, started, "no new pass after the signal")
	assert.Equal(t, 1, ended)
}
