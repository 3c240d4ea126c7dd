package pass

import (
	"context"
	"log/slog"
	"os"
	"time"

	"drover.dev/lib/logging"
)

// Passer runs one convergence pass (Runner does).
type Passer interface {
	Run(ctx context.Context) (Summary, error)
}

// Loop is an ifrit member that runs a pass as soon as it starts, then again every
// interval measured from the end of the previous pass (reference/bbs.md §3.1). A
// failed pass is logged and never stops the loop; a signal stops it after the pass
// in progress.
type Loop struct {
	passer   Passer
	interval time.Duration
	log      *slog.Logger
}

// NewLoop returns a loop of passes every interval.
func NewLoop(p Passer, interval time.Duration, logger *slog.Logger) *Loop {
	return &Loop{passer: p, interval: interval, log: logging.OrDiscard(logger)}
}

// Run is ready at once and runs passes until signalled.
func (l *Loop) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	close(ready)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-signals:
			return nil
		case <-timer.C:
		}
		select { // a signal that raced the timer wins
		case <-signals:
			return nil
		default:
		}
		l.runPass()
		timer.Reset(l.interval)
	}
}

// runPass runs one pass and logs how it went.
func (l *Loop) runPass() {
	sum, err := l.passer.Run(context.Background())
	attrs := []any{
		"snapshot_ms", sum.Snapshot.Milliseconds(), "plan_ms", sum.Plan.Milliseconds(), "apply_ms", sum.Apply.Milliseconds(),
		"applied", sum.Applied, "refused", sum.Refused, "failed", sum.Failed,
	}
	if err != nil {
		l.log.Error("converger-pass-failed", append(attrs, "error", err.Error())...)
		return
	}
	l.log.Info("converger-pass-done", append(attrs, "actual_lrps", sum.Pass.GetActualLrps(), "paused", sum.Pass.GetPaused())...)
}
