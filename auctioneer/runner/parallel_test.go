package runner

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestForEachCallsEveryIndexOnceWithinTheBound(t *testing.T) {
	for _, tc := range []struct{ n, workers, bound int }{
		{n: 0, workers: 4, bound: 0},
		{n: 1, workers: 4, bound: 1},
		{n: 20, workers: 3, bound: 3},
		{n: 3, workers: 10, bound: 3},
		{n: 5, workers: 0, bound: 1},
		{n: 5, workers: -2, bound: 1},
	} {
		var mu sync.Mutex
		active, peak := 0, 0
		calls := make([]int, tc.n)
		forEach(tc.n, tc.workers, func(i int) {
			mu.Lock()
			active++
			peak = max(peak, active)
			calls[i]++
			mu.Unlock()
			runtime.Gosched()
			mu.Lock()
			active--
			mu.Unlock()
		})
		require.LessOrEqual(t, peak, tc.bound, "n=%d workers=%d", tc.n, tc.workers)
		for i, c := range calls {
			require.Equal(t, 1, c, "n=%d workers=%d: calls of %d", tc.n, tc.workers, i)
		}
	}
}

// TestForEachRunsWorkersAtOnce holds every call until as many as workers are in flight:
// a pool narrower than workers would never release them.
func TestForEachRunsWorkersAtOnce(t *testing.T) {
	const n, workers = 7, 3
	var mu sync.Mutex
	arrived := 0
	allIn := make(chan struct{})
	released := make([]bool, n)
	forEach(n, workers, func(i int) {
		mu.Lock()
		arrived++
		if arrived == workers {
			close(allIn)
		}
		mu.Unlock()
		select {
		case <-allIn:
			released[i] = true
		case <-time.After(10 * time.Second):
		}
	})
	for i, ok := range released {
		require.True(t, ok, "call %d waited in vain for %d calls in flight", i, workers)
	}
}
