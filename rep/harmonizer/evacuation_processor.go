package harmonizer

import (
	"context"
	"fmt"
	"log/slog"

	"drover.dev/executor"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/rep/translate"
)

// Evacuation decisions (logged once per instance and pass as "evacuation-decision").
const (
	DecisionKeep   = "keep"
	DecisionDelete = "delete"
)

// evacuateLRP is the evacuation LRP processor (cell.md §2.8): unstarted instances are
// handed back, running ones stay until the BBS says their replacement runs, completed
// ones are reported; every container ends deleted.
func (h *Harmonizer) evacuateLRP(ctx context.Context, c executor.Container, logger *slog.Logger) {
	key, instance, err := translate.LRPKeys(c, h.cfg.CellID)
	if err != nil {
		logger.Error("invalid-lrp-container", "error", err.Error())
		return
	}
	logger = logger.With("instance_guid", instance.GetInstanceGuid(), "container_state", string(c.State))
	switch c.State {
	case executor.StateReserved, executor.StateInitializing, executor.StateCreated:
		keep, err := h.bbs.EvacuateClaimedActualLRP(ctx, key, instance)
		h.metrics.bbsCall("evacuate-claimed-actual-lrp", err)
		h.applyEvacuation(ctx, c, keep, err, transient(err), logger)
	case executor.StateRunning:
		h.announceReplacement(ctx, c, instance, logger)
		routable := c.Routable
		keep, err := h.bbs.EvacuateRunningActualLRP(ctx, &bbsv1.EvacuateRunningActualLRPRequest{
			ActualLrpKey:         key,
			ActualLrpInstanceKey: instance,
			ActualLrpNetInfo:     translate.NetInfo(c.NetInfo),
			Routable:             &routable,
			AvailabilityZone:     h.cfg.Zone,
		})
		h.metrics.bbsCall("evacuate-running-actual-lrp", err)
		h.applyEvacuation(ctx, c, keep, err, err != nil, logger)
	case executor.StateCompleted:
		var keep bool
		if c.RunResult.Stopped {
			keep, err = h.bbs.EvacuateStoppedActualLRP(ctx, key, instance)
			h.metrics.bbsCall("evacuate-stopped-actual-lrp", err)
		} else {
			keep, err = h.bbs.EvacuateCrashedActualLRP(ctx, key, instance, c.RunResult.FailureReason)
			h.metrics.bbsCall("evacuate-crashed-actual-lrp", err)
		}
		h.applyEvacuation(ctx, c, keep, err, transient(err), logger.With("stopped", c.RunResult.Stopped, "reason", c.RunResult.FailureReason))
	}
}

// applyEvacuation logs the decision for one instance and deletes the container unless
// it is kept: because the BBS said so, or because the error is one to retry at the
// next poll (keepOnError).
func (h *Harmonizer) applyEvacuation(ctx context.Context, c executor.Container, keep bool, err error, keepOnError bool, logger *slog.Logger) {
	switch {
	case err != nil && keepOnError:
		logger.Error("evacuation-decision", "decision", DecisionKeep, "why", "bbs-error", "error", err.Error())
		return
	case err != nil:
		logger.Error("evacuation-decision", "decision", DecisionDelete, "why", "bbs-refused", "error", err.Error())
	case keep:
		logger.Info("evacuation-decision", "decision", DecisionKeep, "why", "bbs-keeps-container")
		return
	default:
		logger.Info("evacuation-decision", "decision", DecisionDelete, "why", "bbs-released-container")
	}
	h.deleteContainer(ctx, c.Guid, logger)
	h.announced.Delete(c.Guid)
}

// announceReplacement writes, once per running instance, that the cell asks for its
// replacement in the app's log (when the executor lets the rep add lines).
func (h *Harmonizer) announceReplacement(ctx context.Context, c executor.Container, instance *modelsv1.ActualLRPInstanceKey, logger *slog.Logger) {
	if _, done := h.announced.LoadOrStore(c.Guid, true); done {
		return
	}
	h.cellLog(ctx, c.Guid, fmt.Sprintf("Cell %s requesting replacement for instance %s", h.cfg.CellID, instance.GetInstanceGuid()), logger)
}

// RetireLeftover ends a container still there when the evacuation ends: an LRP is
// reported stopped (its row deleted, whatever its presence) and, after a timeout, its
// app log says so; every container is then deleted. Tasks are only deleted.
func (h *Harmonizer) RetireLeftover(ctx context.Context, c executor.Container, timedOut bool) {
	logger := h.logger.With("container_guid", c.Guid, "container_state", string(c.State))
	if c.Tags[executor.TagLifecycle] == executor.LifecycleLRP {
		if key, instance, err := translate.LRPKeys(c, h.cfg.CellID); err == nil {
			if timedOut {
				h.cellLog(ctx, c.Guid, fmt.Sprintf("Cell %s reached evacuation timeout for instance %s", h.cfg.CellID, instance.GetInstanceGuid()), logger)
			}
			_, err := h.bbs.EvacuateStoppedActualLRP(ctx, key, instance)
			h.metrics.bbsCall("evacuate-stopped-actual-lrp", err)
			if err != nil {
				logger.Error("failed-to-evacuate-stopped-actual-lrp", "error", err.Error())
			}
		}
	}
	logger.Info("evacuation-deleting-leftover-container", "timed_out", timedOut)
	h.deleteContainer(ctx, c.Guid, logger)
}

// processResidualEvacuatingLRP removes an EVACUATING record of this cell whose
// container is gone (checked again when the operation runs).
func (h *Harmonizer) processResidualEvacuatingLRP(ctx context.Context, lrp *modelsv1.ActualLRP) {
	if h.containerExists(ctx, lrp.GetInstanceGuid()) {
		return
	}
	logger := h.logger.With("process_guid", lrp.GetProcessGuid(), "index", lrp.GetIndex(), "instance_guid", lrp.GetInstanceGuid())
	key := &modelsv1.ActualLRPKey{ProcessGuid: lrp.GetProcessGuid(), Index: lrp.GetIndex(), Domain: lrp.GetDomain()}
	instance := &modelsv1.ActualLRPInstanceKey{InstanceGuid: lrp.GetInstanceGuid(), CellId: h.cfg.CellID}
	err := h.bbs.RemoveEvacuatingActualLRP(ctx, key, instance)
	h.metrics.bbsCall("remove-evacuating-actual-lrp", err)
	if err != nil {
		logger.Error("failed-to-remove-residual-evacuating-actual-lrp", "error", err.Error())
		return
	}
	logger.Info("removed-residual-evacuating-actual-lrp")
}
