package harmonizer

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Snapshot is what one bulk sync compares: the executor's containers and the BBS's
// instances and tasks on this cell.
type Snapshot struct {
	Containers []executor.Container
	LRPs       []*modelsv1.ActualLRP
	Tasks      []*modelsv1.Task
}

// Operation is one queued piece of work for a container guid.
type Operation struct {
	// Guid keys the queue (container, instance or task guid).
	Guid string
	// Kind is "container", "residual-lrp", "residual-evacuating-lrp" or "residual-task".
	Kind string
	// LRP is the residual record (Kinds residual-lrp and residual-evacuating-lrp).
	LRP *modelsv1.ActualLRP
}

// Operation kinds.
const (
	OpContainer    = "container"
	OpResidualLRP  = "residual-lrp"
	OpResidualTask = "residual-task"
	// OpResidualEvacuatingLRP removes an EVACUATING record whose container is gone.
	OpResidualEvacuatingLRP = "residual-evacuating-lrp"
)

// Plan is the bulker's pure core (cell.md §2.6): every container gets a container
// operation; an ordinary or evacuating instance on the cell without a container, and a
// running task on the cell without a container, get residual operations (SUSPECT
// records are the converger's).
func Plan(s Snapshot) []Operation {
	have := make(map[string]bool, len(s.Containers))
	ops := make([]Operation, 0, len(s.Containers))
	for _, c := range s.Containers {
		have[c.Guid] = true
		ops = append(ops, Operation{Guid: c.Guid, Kind: OpContainer})
	}
	for _, lrp := range s.LRPs {
		if lrp.GetInstanceGuid() == "" || have[lrp.GetInstanceGuid()] {
			continue
		}
		switch lrp.GetPresence() {
		case modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY, modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED:
			ops = append(ops, Operation{Guid: lrp.GetInstanceGuid(), Kind: OpResidualLRP, LRP: lrp})
		case modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING:
			ops = append(ops, Operation{Guid: lrp.GetInstanceGuid(), Kind: OpResidualEvacuatingLRP, LRP: lrp})
		}
	}
	for _, task := range s.Tasks {
		if task.GetState() != modelsv1.TaskState_TASK_STATE_RUNNING || have[task.GetTaskGuid()] {
			continue
		}
		ops = append(ops, Operation{Guid: task.GetTaskGuid(), Kind: OpResidualTask})
	}
	return ops
}

// Fetch gathers a snapshot in parallel; any failure fails the whole fetch.
func (h *Harmonizer) Fetch(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { s.Containers, err = h.exec.List(gctx); return })
	g.Go(func() (err error) { s.LRPs, err = h.bbs.ListActualLRPs(gctx, h.cfg.CellID); return })
	g.Go(func() (err error) { s.Tasks, err = h.bbs.ListTasks(gctx, h.cfg.CellID); return })
	return s, g.Wait()
}

// Sync runs one bulk sync: fetch, plan, queue. A failed fetch skips the cycle.
func (h *Harmonizer) Sync(ctx context.Context, q *Queue) {
	start := time.Now()
	s, err := h.Fetch(ctx)
	if err != nil {
		h.logger.Error("bulk-sync-fetch-failed", "error", err.Error())
		h.metrics.bulkSync(time.Since(start), err)
		return
	}
	ops := Plan(s)
	for _, op := range ops {
		h.push(q, op)
	}
	h.metrics.bulkSync(time.Since(start), nil)
	h.logger.Debug("bulk-sync", "containers", len(s.Containers), "actual_lrps", len(s.LRPs), "tasks", len(s.Tasks), "operations", len(ops))
}

// push queues the operation for its kind.
func (h *Harmonizer) push(q *Queue, op Operation) {
	switch op.Kind {
	case OpContainer:
		q.Push(op.Guid, func(ctx context.Context) { h.ProcessContainer(ctx, op.Guid) })
	case OpResidualLRP:
		q.Push(op.Guid, func(ctx context.Context) { h.processResidualLRP(ctx, op.LRP) })
	case OpResidualEvacuatingLRP:
		// Its own key: the ordinary record of the same instance may be residual too.
		q.Push(OpResidualEvacuatingLRP+"/"+op.Guid, func(ctx context.Context) { h.processResidualEvacuatingLRP(ctx, op.LRP) })
	case OpResidualTask:
		q.Push(op.Guid, func(ctx context.Context) { h.processResidualTask(ctx, op.Guid) })
	}
}

// processResidualLRP removes an instance the BBS places on this cell when its
// container is gone (checked again when the operation runs).
func (h *Harmonizer) processResidualLRP(ctx context.Context, lrp *modelsv1.ActualLRP) {
	if h.containerExists(ctx, lrp.GetInstanceGuid()) {
		return
	}
	logger := h.logger.With("process_guid", lrp.GetProcessGuid(), "index", lrp.GetIndex(), "instance_guid", lrp.GetInstanceGuid())
	instance := &modelsv1.ActualLRPInstanceKey{InstanceGuid: lrp.GetInstanceGuid(), CellId: h.cfg.CellID}
	err := h.bbs.RemoveActualLRP(ctx, lrp.GetProcessGuid(), lrp.GetIndex(), instance)
	h.metrics.bbsCall("remove-actual-lrp", err)
	if err != nil {
		logger.Error("failed-to-remove-residual-actual-lrp", "error", err.Error())
		return
	}
	logger.Info("removed-residual-actual-lrp")
}
