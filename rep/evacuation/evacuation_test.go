package evacuation

import (
	"context"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/rep/internal/fakeexec"
)

const waitFor = 5 * time.Second

func TestStateStartsOnce(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	s := NewState(m)
	require.False(t, s.Evacuating())
	require.Equal(t, 0.0, testutil.ToFloat64(m.evacuating))
	select {
	case <-s.Started():
		t.Fatal("started before Start")
	default:
	}
	require.False(t, s.Start(), "first start")
	require.True(t, s.Start(), "second start")
	require.True(t, s.Evacuating())
	require.Equal(t, 1.0, testutil.ToFloat64(m.evacuating))
	select {
	case <-s.Started():
	default:
		t.Fatal("Started not closed")
	}
}

// fakeBBS lists fixed ActualLRPs.
type fakeBBS struct{ lrps []*modelsv1.ActualLRP }

func (f fakeBBS) ListActualLRPs(context.Context, string) ([]*modelsv1.ActualLRP, error) {
	return f.lrps, nil
}

// fakeRetirer deletes from the fake executor and records each leftover.
type fakeRetirer struct {
	exec    *fakeexec.Client
	mu      sync.Mutex
	retired map[string]bool // guid → timed out
}

func (f *fakeRetirer) RetireLeftover(ctx context.Context, c executor.Container, timedOut bool) {
	f.mu.Lock()
	f.retired[c.Guid] = timedOut
	f.mu.Unlock()
	_ = f.exec.Delete(ctx, c.Guid)
}

// fakePresence counts removals.
type fakePresence struct {
	mu      sync.Mutex
	removed int
}

func (f *fakePresence) Remove(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed++
	return nil
}

func (f *fakePresence) count() int { f.mu.Lock(); defer f.mu.Unlock(); return f.removed }

type evacuatorFixture struct {
	state    *State
	exec     *fakeexec.Client
	retirer  *fakeRetirer
	presence *fakePresence
	metrics  *Metrics
	process  ifrit.Process
}

func startEvacuator(t *testing.T, timeout time.Duration, lrps ...*modelsv1.ActualLRP) *evacuatorFixture {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	f := &evacuatorFixture{state: NewState(m), exec: fakeexec.New(executor.Resources{MemoryMB: 100, DiskMB: 100, Containers: 10}), presence: &fakePresence{}, metrics: m}
	f.retirer = &fakeRetirer{exec: f.exec, retired: map[string]bool{}}
	ev := NewEvacuator(Config{CellID: "cell-1", PollingInterval: 10 * time.Millisecond, Timeout: timeout}, f.state,
		Deps{Containers: f.exec, LRPs: fakeBBS{lrps: lrps}, Retirer: f.retirer, Presence: f.presence}, m, nil)
	f.process = ifrit.Invoke(ev)
	t.Cleanup(func() {
		f.process.Signal(syscall.SIGTERM)
		<-f.process.Wait()
	})
	return f
}

func (f *evacuatorFixture) waitExit(t *testing.T) {
	t.Helper()
	select {
	case err := <-f.process.Wait():
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("evacuator did not finish")
	}
}

func lrp(guid string, presence modelsv1.ActualLRPPresence) *modelsv1.ActualLRP {
	return &modelsv1.ActualLRP{ProcessGuid: "pg", InstanceGuid: guid, CellId: "cell-1", Presence: presence}
}

func TestEvacuatorWaitsForTheEvacuation(t *testing.T) {
	f := startEvacuator(t, time.Hour)
	f.exec.Put(executor.Container{Guid: "c1"})
	require.Never(t, func() bool {
		select {
		case <-f.process.Wait():
			return true
		default:
			return false
		}
	}, 100*time.Millisecond, 10*time.Millisecond, "nothing happens before the evacuation")
	f.process.Signal(syscall.SIGTERM)
	f.waitExit(t)
	require.Equal(t, 0, f.presence.count(), "a plain stop leaves the presence to expire")
}

func TestEvacuatorFinishesWhenTheContainersAreGone(t *testing.T) {
	f := startEvacuator(t, time.Hour, lrp("ig-ord", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY))
	f.exec.Put(executor.Container{Guid: "c1"})
	f.state.Start()
	require.Never(t, func() bool { return f.presence.count() > 0 }, 100*time.Millisecond, 10*time.Millisecond, "waits while a container is left")

	require.NoError(t, f.exec.Delete(context.Background(), "c1"))
	f.waitExit(t)
	require.Empty(t, f.retirer.retired, "nothing left to retire")
	require.Equal(t, 1, f.presence.count())
	require.Equal(t, 0.0, testutil.ToFloat64(f.metrics.stranded))
}

func TestEvacuatorCleansUpAtTheTimeout(t *testing.T) {
	f := startEvacuator(t, 150*time.Millisecond,
		lrp("ig-1", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING),
		lrp("ig-2", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY))
	f.exec.Put(executor.Container{Guid: "ig-1"})
	f.exec.Put(executor.Container{Guid: "task-1"})
	f.state.Start()
	f.waitExit(t)
	require.Equal(t, map[string]bool{"ig-1": true, "task-1": true}, f.retirer.retired, "every leftover retired as timed out")
	left, err := f.exec.List(context.Background())
	require.NoError(t, err)
	require.Empty(t, left)
	require.Equal(t, 1, f.presence.count())
	require.Equal(t, 1.0, testutil.ToFloat64(f.metrics.stranded), "one EVACUATING instance stranded")
}

func TestEvacuatorStopsOnASignalWithoutCleaningUp(t *testing.T) {
	f := startEvacuator(t, time.Hour)
	f.exec.Put(executor.Container{Guid: "c1"})
	f.state.Start()
	require.Eventually(t, func() bool { return f.state.Evacuating() }, waitFor, 10*time.Millisecond)
	f.process.Signal(syscall.SIGTERM)
	f.waitExit(t)
	require.Empty(t, f.retirer.retired)
	require.Equal(t, 0, f.presence.count())
}

// waiter is a group stand-in: ready at once, it records the signal that stops it.
type waiter struct{ got chan os.Signal }

func (w waiter) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	close(ready)
	w.got <- <-signals
	return nil
}

func TestOnSignalTurnsTheFirstStopSignalIntoAnEvacuation(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			state := NewState(nil)
			w := waiter{got: make(chan os.Signal, 1)}
			process := ifrit.Invoke(OnSignal(w, state, nil))
			process.Signal(sig)
			require.Eventually(t, state.Evacuating, waitFor, 5*time.Millisecond)
			require.Never(t, func() bool { return len(w.got) > 0 }, 50*time.Millisecond, 5*time.Millisecond, "the group keeps running")

			process.Signal(sig)
			select {
			case err := <-process.Wait():
				require.NoError(t, err)
			case <-time.After(waitFor):
				t.Fatal("a second signal did not stop the group")
			}
			require.Equal(t, sig, <-w.got)
		})
	}
}

func TestOnSignalPassesOnOtherSignalsAndTheGroupsExit(t *testing.T) {
	state := NewState(nil)
	w := waiter{got: make(chan os.Signal, 1)}
	process := ifrit.Invoke(OnSignal(w, state, nil))
	process.Signal(syscall.SIGHUP)
	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("SIGHUP was not passed on")
	}
	require.Equal(t, syscall.SIGHUP, <-w.got)
	require.False(t, state.Evacuating())
}
