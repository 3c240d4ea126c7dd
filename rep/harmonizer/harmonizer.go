package harmonizer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"drover.dev/executor"
	"drover.dev/lib/logging"
	"drover.dev/rep/crashlogs"
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
	// Evacuation, when set, switches LRP containers to the evacuation processor and the
	// bulk sync to EvacuationPollingInterval once the cell starts evacuating.
	Evacuation Evacuation
	// EvacuationPollingInterval is the bulk sync period while evacuating
	// (PollingInterval when 0).
	EvacuationPollingInterval time.Duration
	// CrashLogs, when set, keeps the last lines of each crashed instance's container
	// before it is deleted (logs --previous).
	CrashLogs CrashLogKeeper
}

// CrashLogKeeper keeps the last output of crashed instances (crashlogs.Store).
type CrashLogKeeper interface {
	// MaxLines is how many last lines are worth reading.
	MaxLines() int
	Keep(key crashlogs.Key, lines []executor.LogLine)
}

// Evacuation is the cell's evacuation state as the harmonizer reads it.
type Evacuation interface {
	Evacuating() bool
	// Started is closed when the evacuation begins.
	Started() <-chan struct{}
}

// CellLogWriter is implemented by executors that let the rep add a line of its own to
// a container's log (source CELL). The harmonizer writes evacuation lines only when
// the executor is one.
type CellLogWriter interface {
	AppendCellLog(ctx context.Context, guid, text string) error
}

// Harmonizer processes containers against the BBS.
type Harmonizer struct {
	cfg     Config
	exec    executor.Client
	bbs     BBS
	logger  *slog.Logger
	metrics *Metrics
	// announced holds the guids of running instances whose replacement was already
	// announced in their app log.
	announced sync.Map
	// reportedRunning holds the guids of containers whose RUNNING start the BBS has
	// accepted once: later starts (the bulk sync's heartbeats) are logged at debug level.
	reportedRunning sync.Map
}

// New makes a harmonizer; metrics may be nil. The logger should name the cell.
func New(cfg Config, exec executor.Client, bbs BBS, metrics *Metrics, logger *slog.Logger) *Harmonizer {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.EvacuationPollingInterval <= 0 {
		cfg.EvacuationPollingInterval = cfg.PollingInterval
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
		logger := logger.With("process_guid", c.Tags[executor.TagProcessGuid], "index", c.Tags[executor.TagProcessIndex])
		if h.evacuating() {
			h.evacuateLRP(ctx, c, logger)
			return
		}
		h.processLRP(ctx, c, logger)
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
	h.reportedRunning.Delete(guid)
	logger.Info("deleted-container")
}

// containerExists reports whether the executor still holds guid; an error counts as
// "exists" so that a residual record is not removed on a guess.
func (h *Harmonizer) containerExists(ctx context.Context, guid string) bool {
	_, err := h.exec.Get(ctx, guid)
	return !errors.Is(err, executor.ErrContainerNotFound)
}

// evacuating reports whether the cell has started evacuating.
func (h *Harmonizer) evacuating() bool {
	return h.cfg.Evacuation != nil && h.cfg.Evacuation.Evacuating()
}

// cellLog adds a line to a container's app log when the executor allows it.
func (h *Harmonizer) cellLog(ctx context.Context, guid, text string, logger *slog.Logger) {
	w, ok := h.exec.(CellLogWriter)
	if !ok {
		return
	}
	if err := w.AppendCellLog(ctx, guid, text); err != nil {
		logger.Error("failed-to-write-app-log-line", "error", err.Error())
	}
}
