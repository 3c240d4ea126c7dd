package keyedmutex

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSameKeyIsSerialisedOtherKeysAreNot(t *testing.T) {
	var m Mutex
	var inA atomic.Int32
	var maxA atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := m.Lock("a")
			defer unlock()
			n := inA.Add(1)
			if n > maxA.Load() {
				maxA.Store(n)
			}
			time.Sleep(time.Millisecond)
			inA.Add(-1)
		}()
	}
	// While "a" is contended, "b" can be taken at once.
	unlockB := m.Lock("b")
	unlockB()
	wg.Wait()
	require.Equal(t, int32(1), maxA.Load(), "two holders of one key at once")
	m.mu.Lock()
	defer m.mu.Unlock()
	require.Empty(t, m.locks, "released keys are forgotten")
}
