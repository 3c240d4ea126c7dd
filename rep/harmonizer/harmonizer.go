package harmonizer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"drover.dev/executor"
	"drover.dev/lib/logging"
)

// DefaultWorkers bounds how many container operations run at once.
const DefaultWorkers = 32

// Config is what the harmonizer needs to know about its cell.
type Config struct {
	CellID string
	// Zone is reported as the availability zone of started instances.
	Zone string
	// PollingInterval is the period of the bulk sync.
	PollingInterval time.Duration
	// Workers bounds concurrent operations (DefaultWorkers when 0).
	Workers int
}

// Harmonizer processes containers against the BBS.
type Harmonizer struct {
	cfg     Config
	exec    executor.Client
	bbs     BBS
	logger  *slog.Logger
	metrics *Metrics
}

// New makes a harmonizer; metrics may be nil. The logger should name the cell.
func New(cfg Config, exec executor.Client, bbs BBS, metrics *Metrics, logger *slog.Logger) *Harmonizer {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	return &Harmonizer{cfg: cfg, exec: exec, bbs: bbs, metrics: metrics, logger: logging.OrDiscard(logger)}
}

// ProcessContainer reads the container again and applies the processor of its
// lifecycle. An unknown guid (already deleted) is nothing to do.
func (h *Harmonizer) ProcessContainer(ctx context.Context, guid string) {
	c, err := h.exec.Get(ctx, guid)
	if errors.Is(err, executor.ErrContainerNotFound) {
		return
	}
	logger := h.logger.With("container_guid", guid)
	if err != nil {
		logger.Error("failed-to-get-container", "error", err.Error())
		return
	}
	switch c.Tags[executor.TagLifecycle] {
	case executor.LifecycleLRP:
		h.processLRP(ctx, c, logger.With("process_guid", c.Tags[executor.TagProcessGuid], "index", c.Tags[executor.TagProcessIndex]))
	case executor.LifecycleTask:
		h.processTask(ctx, c, logger)
	default:
		logger.Debug("ignoring-container-without-lifecycle")
	}
}

// deleteContainer destroys a container; an already deleted one is fine.
func (h *Harmonizer) deleteContainer(ctx context.Context, guid string, logger *slog.Logger) {
	if err := h.exec.Delete(ctx, guid); err != nil && !errors.Is(err, executor.ErrContainerNotFound) {
		logger.Error("failed-to-delete-container", "error", err.Error())
		return
	}
	logger.Info("deleted-container")
}

// containerExists reports whether the executor still holds guid; an error counts as
// "exists" so that a residual record is not removed on a guess.
func (h *Harmonizer) containerExists(ctx context.Context, guid string) bool {
	_, err := h.exec.Get(ctx, guid)
	return !errors.Is(err, executor.ErrContainerNotFound)
}
