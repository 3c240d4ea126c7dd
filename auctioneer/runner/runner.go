package runner

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"drover.dev/auctioneer/auction"
	"drover.dev/lib/logging"
)

// Defaults of Options left zero.
const (
	DefaultCellStateTimeout     = 10 * time.Second
	DefaultCommunicationTimeout = 10 * time.Second
	// DefaultBBSRetryDelay is the pause before requeueing work after the BBS failed to list cells.
	DefaultBBSRetryDelay = time.Second
	// DefaultWorkers bounds the parallel rep and BBS calls (upstream's auction_runner_workers).
	DefaultWorkers = 1000
	// FetchAttempts is how often the cell states are fetched when no cell answers.
	FetchAttempts = 4
)

// Options configure a Runner. Zero durations and workers take the defaults.
type Options struct {
	CellStateTimeout     time.Duration
	CommunicationTimeout time.Duration
	BBSRetryDelay        time.Duration
	Workers              int
	Auction              auction.Options
	Logger               *slog.Logger
	// Metrics may be nil.
	Metrics *Metrics
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Runner runs one auction at a time whenever its batch has work.
type Runner struct {
	batch *Batch
	bbs   BBS
	reps  RepFactory
	opts  Options
	log   *slog.Logger
}

// New returns a runner of the work queued in batch.
func New(batch *Batch, bbs BBS, reps RepFactory, opts Options) *Runner {
	if opts.CellStateTimeout <= 0 {
		opts.CellStateTimeout = DefaultCellStateTimeout
	}
	if opts.CommunicationTimeout <= 0 {
		opts.CommunicationTimeout = DefaultCommunicationTimeout
	}
	if opts.BBSRetryDelay <= 0 {
		opts.BBSRetryDelay = DefaultBBSRetryDelay
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Metrics == nil {
		opts.Metrics, _ = NewMetrics(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Runner{batch: batch, bbs: bbs, reps: reps, opts: opts, log: logging.OrDiscard(opts.Logger)}
}

// Run is the ifrit member: ready at once, it auctions whenever work arrives and stops
// after the auction in progress when signalled.
func (r *Runner) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	close(ready)
	for {
		select {
		case <-signals:
			return nil
		case <-r.batch.HasWork():
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.RunAuction(ctx)
			}()
			select {
			case <-done:
			case <-signals:
				cancel()
				<-done
				return nil
			}
		}
	}
}

// RunAuction drains the batch and runs one auction of everything in it.
func (r *Runner) RunAuction(ctx context.Context) {
	lrps, tasks := r.batch.DedupeAndDrain()
	if len(lrps) == 0 && len(tasks) == 0 {
		return
	}
	log := r.log.With("lrps", len(lrps), "tasks", len(tasks))
	log.Info("auction-started")

	cells, err := r.fetchCells(ctx)
	if err != nil {
		log.Error("failed-to-list-cells", "error", err.Error(), "retry_in", r.opts.BBSRetryDelay.String())
		select {
		case <-ctx.Done():
		case <-time.After(r.opts.BBSRetryDelay):
		}
		r.batch.AddLRPs(lrps)
		r.batch.AddTasks(tasks)
		return
	}

	result := auction.Place(cells.all(), lrps, tasks, r.opts.Auction)
	r.commit(ctx, cells, &result)
	r.report(ctx, result)

	placedLRPs, placedTasks := 0, 0
	for _, work := range result.Work {
		placedLRPs += len(work.LRPs)
		placedTasks += len(work.Tasks)
	}
	m := r.opts.Metrics
	m.LRPAuctionsStarted.Add(float64(placedLRPs))
	m.TaskAuctionsStarted.Add(float64(placedTasks))
	m.LRPAuctionsFailed.Add(float64(len(result.FailedLRPs)))
	m.TaskAuctionsFailed.Add(float64(len(result.FailedTasks)))
	log.Info("auction-finished",
		"cells", len(cells.states),
		"placed_lrps", placedLRPs, "placed_tasks", placedTasks,
		"failed_lrps", len(result.FailedLRPs), "failed_tasks", len(result.FailedTasks))
}

// errNoRep is a cell without a usable rep client.
var errNoRep = errors.New("no rep client for cell")
