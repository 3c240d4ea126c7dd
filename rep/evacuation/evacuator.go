package evacuation

import (
	"context"
	"log/slog"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"drover.dev/executor"
	"drover.dev/lib/logging"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Cleanup bounds.
const (
	// cleanupTimeout bounds the whole cleanup (BBS calls, container deletes, presence).
	cleanupTimeout = 2 * time.Minute
	// cleanupWorkers bounds the containers deleted at once.
	cleanupWorkers = 32
)

// Reasons an evacuation ends (logged).
const (
	EndNoContainersLeft = "no-containers-left"
	EndTimeout          = "timeout"
)

// Config times the evacuator.
type Config struct {
	CellID string
	// PollingInterval is how often the executor's containers are counted.
	PollingInterval time.Duration
	// Timeout bounds the wait: what is left then is deleted.
	Timeout time.Duration
}

// Containers lists what the executor still holds (an executor.Client is one).
type Containers interface {
	List(ctx context.Context) ([]executor.Container, error)
}

// LRPLister lists the ActualLRPs on a cell, every presence (the harmonizer's BBS is one).
type LRPLister interface {
	ListActualLRPs(ctx context.Context, cellID string) ([]*modelsv1.ActualLRP, error)
}

// Retirer ends one container left when the evacuation ends: it tells the BBS the
// instance stopped and deletes the container (the harmonizer is one).
type Retirer interface {
	RetireLeftover(ctx context.Context, c executor.Container, timedOut bool)
}

// PresenceRemover takes the cell's presence out of the BBS and stops renewing it.
type PresenceRemover interface {
	Remove(ctx context.Context) error
}

// Deps are the evacuator's neighbours.
type Deps struct {
	Containers Containers
	LRPs       LRPLister
	Retirer    Retirer
	Presence   PresenceRemover
}

// Evacuator is the ifrit member that ends an evacuation (cell.md §2.8 steps 4–5).
type Evacuator struct {
	cfg     Config
	state   *State
	deps    Deps
	metrics *Metrics
	logger  *slog.Logger
}

// NewEvacuator makes the member; metrics may be nil.
func NewEvacuator(cfg Config, state *State, deps Deps, metrics *Metrics, logger *slog.Logger) *Evacuator {
	return &Evacuator{cfg: cfg, state: state, deps: deps, metrics: metrics, logger: logging.OrDiscard(logger)}
}

// Run is ready at once and waits for the evacuation to start. It then counts the
// executor's containers at once and every polling interval until none are left or the
// timeout passes, cleans up, and returns nil, so that the rep's ordered group stops
// and the process exits 0. A signal ends it at once without cleaning up.
func (e *Evacuator) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	close(ready)
	select {
	case <-signals:
		return nil
	case <-e.state.Started():
	}
	start := time.Now()
	e.logger.Info("evacuation-started", "timeout", e.cfg.Timeout.String(), "polling_interval", e.cfg.PollingInterval.String())
	reason, stopped := e.wait(signals)
	if stopped {
		e.logger.Info("evacuation-interrupted", "duration", time.Since(start).String())
		return nil
	}
	e.cleanup(reason)
	e.logger.Info("evacuation-finished", "reason", reason, "duration", time.Since(start).String())
	return nil
}

// wait polls until no container is left or the timeout passes; stopped reports a signal.
func (e *Evacuator) wait(signals <-chan os.Signal) (reason string, stopped bool) {
	timeout := time.NewTimer(e.cfg.Timeout)
	defer timeout.Stop()
	ticker := time.NewTicker(e.cfg.PollingInterval)
	defer ticker.Stop()
	for {
		if e.containersLeft() == 0 {
			return EndNoContainersLeft, false
		}
		select {
		case <-ticker.C:
		case <-timeout.C:
			return EndTimeout, false
		case <-signals:
			return "", true
		}
	}
}

// containersLeft counts the executor's containers; -1 when it cannot tell.
func (e *Evacuator) containersLeft() int {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.PollingInterval)
	defer cancel()
	containers, err := e.deps.Containers.List(ctx)
	if err != nil {
		e.logger.Error("evacuation-failed-to-list-containers", "error", err.Error())
		return -1
	}
	e.logger.Info("evacuation-waiting", "containers_left", len(containers))
	return len(containers)
}

// cleanup records the stranded EVACUATING instances, retires every container left and
// removes the cell's presence.
func (e *Evacuator) cleanup(reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	e.countStranded(ctx)
	containers, err := e.deps.Containers.List(ctx)
	if err != nil {
		e.logger.Error("evacuation-cleanup-failed-to-list-containers", "error", err.Error())
	}
	g := errgroup.Group{}
	g.SetLimit(cleanupWorkers)
	for _, c := range containers {
		g.Go(func() error {
			e.deps.Retirer.RetireLeftover(ctx, c, reason == EndTimeout)
			return nil
		})
	}
	_ = g.Wait()
	if err := e.deps.Presence.Remove(ctx); err != nil {
		e.logger.Error("evacuation-failed-to-remove-cell-presence", "error", err.Error())
		return
	}
	e.logger.Info("evacuation-removed-cell-presence")
}

// countStranded logs and records the EVACUATING instances still on this cell.
func (e *Evacuator) countStranded(ctx context.Context) {
	lrps, err := e.deps.LRPs.ListActualLRPs(ctx, e.cfg.CellID)
	if err != nil {
		e.logger.Error("evacuation-failed-to-list-actual-lrps", "error", err.Error())
		return
	}
	var stranded []string
	for _, lrp := range lrps {
		if lrp.GetPresence() == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING {
			stranded = append(stranded, lrp.GetInstanceGuid())
		}
	}
	e.metrics.setStranded(len(stranded))
	if len(stranded) > 0 {
		e.logger.Warn("stranded-evacuating-lrps", "count", len(stranded), "instance_guids", stranded)
		return
	}
	e.logger.Info("no-stranded-evacuating-lrps")
}
