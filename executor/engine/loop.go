package engine

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tedsuo/ifrit"

	"drover.dev/executor"
	"drover.dev/executor/logbuf"
)

// Completion reasons the executor gives on its own.
const (
	ReasonExpired = "expired container"
	ReasonMissing = "missing container"
)

// Runner returns Loop as an ifrit.Runner (Run itself is executor.Client's Run).
func (e *Executor) Runner() ifrit.Runner { return ifrit.RunFunc(e.Loop) }

// Loop is the executor's ifrit run function: it adopts the runtime's containers, closes ready, then
// expires reservations, reaps containers and follows runtime events until signalled.
// It returns without destroying containers, so a restarted executor can adopt them.
func (e *Executor) Loop(signals <-chan os.Signal, ready chan<- struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := e.rt.Events(ctx)
	e.adopt(ctx)
	close(ready)

	prune := time.NewTicker(e.cfg.ReservedExpiration / 2)
	defer prune.Stop()
	reap := time.NewTicker(e.cfg.ReapInterval)
	defer reap.Stop()
	for {
		select {
		case sig := <-signals:
			e.logger.Info("executor-stopping", "signal", sig.String())
			e.detachedOnce.Do(func() { close(e.detached) })
			return nil
		case <-prune.C:
			e.pruneReservations(time.Now())
		case <-reap.C:
			e.reap(ctx)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			e.handleRuntimeEvent(ev)
		}
	}
}

// adopt takes over the runtime's containers: those with a readable state come back
// running with their processes reattached and liveness checks resumed; the rest are
// destroyed.
func (e *Executor) adopt(ctx context.Context) {
	list, err := e.rt.List(ctx)
	if err != nil {
		e.logger.Error("adopt-list-failed", "error", err)
		return
	}
	for _, rc := range list {
		if err := e.adoptOne(rc); err != nil {
			e.logger.Warn("adopt-failed-destroying", "guid", rc.Guid, "error", err)
			if err := e.rt.Destroy(ctx, rc.Guid); err != nil {
				e.logger.Error("destroy-failed", "guid", rc.Guid, "error", err)
			}
		}
	}
}

// adoptOne puts one runtime container into the store and resumes it.
func (e *Executor) adoptOne(rc executor.RuntimeContainer) error {
	if !rc.Alive {
		return errNotAlive
	}
	st, ri, err := decodeState(rc.State)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.nodes[rc.Guid]; ok {
		return nil
	}
	if !fits(e.remainingLocked(), st.Resource) {
		return executor.ErrInsufficientResources
	}
	tags := st.Tags
	if len(rc.Tags) > 0 {
		tags = rc.Tags
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n := &node{
		c: executor.Container{
			Guid: rc.Guid, State: executor.StateRunning, Resource: st.Resource, Tags: tags, RunInfo: ri,
			NetInfo: rc.NetInfo, Routable: true, AllocatedAt: st.AllocatedAt, RunningAt: rc.CreatedAt,
		},
		logs:    logbuf.New(e.cfg.LogLinesPerContainer),
		created: true, cancel: cancel, done: make(chan struct{}),
	}
	e.nodes[rc.Guid] = n
	e.logger.Info("container-adopted", "guid", rc.Guid)
	go func() {
		defer close(n.done)
		e.finish(n, e.runSteps(runCtx, n, rc.NetInfo, *ri, true))
	}()
	if rc.OOMKills > 0 {
		// The memory limit killed a process while no executor was watching.
		e.crashForOOMLocked(n)
	}
	return nil
}

// crashForOOMLocked records that the memory limit killed a process of the container and
// crashes it, as Garden does: an OOM kill of any process, not only the main one, ends the
// instance. e.mu must be held.
func (e *Executor) crashForOOMLocked(n *node) {
	n.oom.Store(true)
	if n.c.State == executor.StateCompleted || n.stopResult != nil {
		return
	}
	reason := OOMReason(n.c.Resource.MemoryMB)
	e.logger.Info("container-out-of-memory", "guid", n.c.Guid, "reason", reason)
	n.cellLog("Cell %s crashing instance %s: %s", e.cfg.CellID, n.c.Guid, reason)
	e.stopLocked(n, executor.RunResult{Failed: true, FailureReason: reason})
}

// OOMReason is the failure reason of a container whose memory limit killed a process.
func OOMReason(memoryMB int) string {
	if memoryMB <= 0 {
		return "out of memory: a process in the container was killed by the memory limit"
	}
	return fmt.Sprintf("out of memory: a process in the container was killed at the %d MB memory limit", memoryMB)
}

type adoptError string

func (a adoptError) Error() string { return string(a) }

const errNotAlive = adoptError("container is not alive")

// pruneReservations completes reservations older than ReservedExpiration.
func (e *Executor) pruneReservations(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range e.nodes {
		if n.c.State == executor.StateReserved && now.Sub(n.c.AllocatedAt) >= e.cfg.ReservedExpiration {
			e.logger.Info("reservation-expired", "guid", n.c.Guid)
			e.stopLocked(n, executor.RunResult{Failed: true, FailureReason: ReasonExpired})
		}
	}
}

// reap destroys runtime containers the store does not know and completes store
// entries whose runtime container is gone.
func (e *Executor) reap(ctx context.Context) {
	listed := time.Now()
	list, err := e.rt.List(ctx)
	if err != nil {
		e.logger.Error("reap-list-failed", "error", err)
		return
	}
	alive := make(map[string]bool, len(list))
	var unknown []string
	e.mu.Lock()
	for _, rc := range list {
		alive[rc.Guid] = rc.Alive
		n, ok := e.nodes[rc.Guid]
		if !ok {
			unknown = append(unknown, rc.Guid)
			continue
		}
		if n.created && rc.OOMKills > 0 {
			e.crashForOOMLocked(n)
		}
	}
	for guid, n := range e.nodes {
		// A container whose creation finished after the list was started may be missing
		// from it: the next pass judges it.
		if n.created && n.createdAt.Before(listed) && n.c.State != executor.StateCompleted && !alive[guid] {
			e.logger.Info("container-missing", "guid", guid)
			e.stopLocked(n, executor.RunResult{Failed: true, FailureReason: ReasonMissing})
		}
	}
	e.mu.Unlock()
	for _, guid := range unknown {
		e.logger.Info("reaping-unknown-container", "guid", guid)
		if err := e.rt.Destroy(ctx, guid); err != nil {
			e.logger.Error("destroy-failed", "guid", guid, "error", err)
		}
	}
}

// handleRuntimeEvent crashes containers whose memory limit killed a process and stops
// containers over their disk or gone.
func (e *Executor) handleRuntimeEvent(ev executor.RuntimeEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[ev.Guid]
	if !ok {
		return
	}
	switch ev.Kind {
	case executor.RuntimeOOM:
		e.crashForOOMLocked(n)
	case executor.RuntimeDiskExceeded:
		reason := ev.Reason
		if reason == "" {
			reason = "disk quota exceeded"
		}
		e.stopLocked(n, executor.RunResult{Failed: true, FailureReason: reason})
	case executor.RuntimeVanished:
		reason := ReasonMissing
		if n.oom.Load() {
			reason += " (out of memory)"
		}
		e.stopLocked(n, executor.RunResult{Failed: true, FailureReason: reason})
	}
}
