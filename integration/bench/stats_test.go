package bench

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/client"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single", []time.Duration{ms(7)}, 99, ms(7)},
		{"median of odd", []time.Duration{ms(1), ms(2), ms(3)}, 50, ms(2)},
		{"median of even takes lower", []time.Duration{ms(1), ms(2), ms(3), ms(4)}, 50, ms(2)},
		{"p99 of 100", hundred, 99, ms(99)},
		{"p100 is max", hundred, 100, ms(100)},
		{"tiny p is min", hundred, 0.0001, ms(1)},
		{"p0 clamps to min", hundred, 0, ms(1)},
		{"p above 100 clamps to max", hundred, 150, ms(100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Percentile(tt.sorted, tt.p))
		})
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		want    LatencyStats
	}{
		{"empty", nil, LatencyStats{}},
		{"unsorted input", []time.Duration{ms(4), ms(1), ms(3), ms(2)},
			LatencyStats{Count: 4, MinMS: 1, MeanMS: 2.5, P50MS: 2, P99MS: 4, MaxMS: 4}},
		{"sub-millisecond", []time.Duration{500 * time.Microsecond},
			LatencyStats{Count: 1, MinMS: 0.5, MeanMS: 0.5, P50MS: 0.5, P99MS: 0.5, MaxMS: 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.samples...)
			require.Equal(t, tt.want, Summarize(in))
			require.Equal(t, tt.samples, in, "input must not be reordered")
		})
	}
}

func TestRateAndRatio(t *testing.T) {
	require.InDelta(t, 2000.0, Rate(1000, 500*time.Millisecond), 1e-9)
	require.Zero(t, Rate(10, 0))
	require.InDelta(t, 2.5, Ratio(5, 2), 1e-9)
	require.Zero(t, Ratio(5, 0))
}

func TestRunConcurrentRunsEveryJobOnce(t *testing.T) {
	tests := []struct {
		name           string
		n, concurrency int
	}{
		{"more jobs than workers", 50, 4},
		{"more workers than jobs", 3, 16},
		{"no jobs", 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]int{}
			workers := map[int]bool{}
			res, err := RunConcurrent(context.Background(), tt.n, tt.concurrency, func(_ context.Context, w, i int) error {
				mu.Lock()
				defer mu.Unlock()
				seen[i]++
				workers[w] = true
				return nil
			})
			require.NoError(t, err)
			require.Len(t, res.Latencies, tt.n)
			require.Len(t, seen, tt.n)
			for i := range tt.n {
				require.Equal(t, 1, seen[i], "job %d", i)
			}
			for w := range workers {
				require.Less(t, w, tt.concurrency)
			}
		})
	}
}

func TestRunConcurrentStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	_, err := RunConcurrent(context.Background(), 1000, 2, func(ctx context.Context, _, i int) error {
		if i == 3 {
			return boom
		}
		return ctx.Err()
	})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "job 3")
}

func TestScenariosRejectMissingClients(t *testing.T) {
	for name, clients := range map[string][]*client.Client{"none": nil, "a nil one": {nil}} {
		t.Run(name, func(t *testing.T) {
			_, err := DesireLRPs(t.Context(), clients, LRPSet("dom", 1, 1), 1)
			require.ErrorContains(t, err, "no clients")
			_, err = ClaimStart(t.Context(), clients, nil, 1)
			require.ErrorContains(t, err, "no clients")
		})
	}
	_, err := ListActualLRPs(t.Context(), nil, nil, false)
	require.Error(t, err)
	require.Error(t, ListStore(t.Context(), nil, 0))
	require.Error(t, ListPostgres(t.Context(), nil, 0))
	_, err = Run(t.Context(), nil, Config{})
	require.Error(t, err)
}

func TestRunConcurrentRejectsBadArguments(t *testing.T) {
	noop := func(context.Context, int, int) error { return nil }
	for name, run := range map[string]func() error{
		"negative n":       func() error { _, err := RunConcurrent(context.Background(), -1, 1, noop); return err },
		"zero concurrency": func() error { _, err := RunConcurrent(context.Background(), 1, 0, noop); return err },
		"nil job":          func() error { _, err := RunConcurrent(context.Background(), 1, 1, nil); return err },
	} {
		t.Run(name, func(t *testing.T) { require.Error(t, run()) })
	}
}

func TestTimeInterleaved(t *testing.T) {
	var calls []string
	record := func(name string) func() error {
		return func() error { calls = append(calls, name); return nil }
	}
	times, err := TimeInterleaved(2, record("a"), record("b"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "a", "b", "a", "b"}, calls, "one warm-up round, then two timed rounds")
	require.Len(t, times, 2)
	require.Len(t, times[0], 2)
	require.Len(t, times[1], 2)

	boom := errors.New("boom")
	_, err = TimeInterleaved(3, record("a"), func() error { return boom })
	require.ErrorIs(t, err, boom)
}
