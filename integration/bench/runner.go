package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Job is one unit of work of a concurrent run: worker is the worker running it
// (0..concurrency-1) and i the job's number (0..n-1), unique across the run.
type Job func(ctx context.Context, worker, i int) error

// RunResult is what a concurrent run measured: the wall time of the whole run and the
// latency of every job, indexed by job number.
type RunResult struct {
	Wall      time.Duration
	Latencies []time.Duration
}

// RunConcurrent runs jobs 0..n-1 on concurrency workers, each taking the next job
// number until none is left, and times every job. The first failing job cancels the
// run; its error is returned together with the job number.
func RunConcurrent(ctx context.Context, n, concurrency int, job Job) (RunResult, error) {
	if n < 0 || concurrency < 1 || job == nil {
		return RunResult{}, errors.New("run needs n >= 0, concurrency >= 1 and a job")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	latencies := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range min(concurrency, max(n, 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := job(ctx, w, i); err != nil {
					cancel(fmt.Errorf("job %d: %w", i, err))
					return
				}
				latencies[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return RunResult{}, err
	}
	return RunResult{Wall: wall, Latencies: latencies}, nil
}
