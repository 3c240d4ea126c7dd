package harmonizer

import (
	"context"
	"log/slog"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/executor"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/rep/crashlogs"
	"drover.dev/rep/translate"
)

// processLRP is the ordinary LRP processor (cell.md §2.7).
func (h *Harmonizer) processLRP(ctx context.Context, c executor.Container, logger *slog.Logger) {
	key, instance, err := translate.LRPKeys(c, h.cfg.CellID)
	if err != nil {
		logger.Error("invalid-lrp-container", "error", err.Error())
		return
	}
	switch c.State {
	case executor.StateReserved:
		h.lrpReserved(ctx, c, key, instance, logger)
	case executor.StateInitializing, executor.StateCreated:
		h.claim(ctx, c, key, instance, logger)
	case executor.StateRunning:
		h.lrpRunning(ctx, c, key, instance, logger)
	case executor.StateCompleted:
		h.lrpCompleted(ctx, c, key, instance, logger)
	}
}

// claim claims the instance; a refused claim deletes the container. It reports whether
// the claim holds.
func (h *Harmonizer) claim(ctx context.Context, c executor.Container, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, logger *slog.Logger) bool {
	err := h.bbs.ClaimActualLRP(ctx, key, instance)
	h.metrics.bbsCall("claim-actual-lrp", err)
	if err == nil {
		return true
	}
	logger.Error("failed-to-claim-actual-lrp", "error", err.Error())
	if refused(err) {
		h.deleteContainer(ctx, c.Guid, logger)
	}
	return false
}

func (h *Harmonizer) lrpReserved(ctx context.Context, c executor.Container, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, logger *slog.Logger) {
	if !h.claim(ctx, c, key, instance, logger) {
		return
	}
	logger.Info("claimed-actual-lrp")
	desired, err := h.bbs.DesiredLRP(ctx, key.GetProcessGuid())
	h.metrics.bbsCall("get-desired-lrp", err)
	if err != nil {
		logger.Error("failed-to-fetch-desired-lrp", "error", err.Error())
		if models.FromError(err).Type == models.ErrTypeResourceNotFound {
			h.removeAndDelete(ctx, c, key, instance, logger)
		}
		return
	}
	if err := h.exec.Run(ctx, translate.LRPRunRequest(c.Guid, key.GetIndex(), desired)); err != nil {
		logger.Error("failed-to-run-container", "error", err.Error())
		h.removeAndDelete(ctx, c, key, instance, logger)
		return
	}
	logger.Info("running-container")
}

func (h *Harmonizer) removeAndDelete(ctx context.Context, c executor.Container, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, logger *slog.Logger) {
	err := h.bbs.RemoveActualLRP(ctx, key.GetProcessGuid(), key.GetIndex(), instance)
	h.metrics.bbsCall("remove-actual-lrp", err)
	if err != nil {
		logger.Error("failed-to-remove-actual-lrp", "error", err.Error())
	}
	h.deleteContainer(ctx, c.Guid, logger)
}

func (h *Harmonizer) lrpRunning(ctx context.Context, c executor.Container, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, logger *slog.Logger) {
	routable := c.Routable
	err := h.bbs.StartActualLRP(ctx, &bbsv1.StartActualLRPRequest{
		ActualLrpKey:         key,
		ActualLrpInstanceKey: instance,
		ActualLrpNetInfo:     translate.NetInfo(c.NetInfo),
		Routable:             &routable,
		AvailabilityZone:     h.cfg.Zone,
	})
	h.metrics.bbsCall("start-actual-lrp", err)
	if err == nil {
		if _, again := h.reportedRunning.LoadOrStore(c.Guid, true); again {
			logger.Debug("started-actual-lrp")
			return
		}
		logger.Info("started-actual-lrp")
		return
	}
	logger.Error("failed-to-start-actual-lrp", "error", err.Error())
	if refused(err) {
		if err := h.exec.Stop(ctx, c.Guid); err != nil {
			logger.Error("failed-to-stop-container", "error", err.Error())
		}
	}
}

func (h *Harmonizer) lrpCompleted(ctx context.Context, c executor.Container, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, logger *slog.Logger) {
	var err error
	if c.RunResult.Stopped {
		err = h.bbs.RemoveActualLRP(ctx, key.GetProcessGuid(), key.GetIndex(), instance)
		h.metrics.bbsCall("remove-actual-lrp", err)
	} else {
		// Kept before the crash is reported: once the BBS shows it, so does logs --previous.
		h.keepCrashLog(ctx, c, key, logger)
		err = h.bbs.CrashActualLRP(ctx, key, instance, c.RunResult.FailureReason)
		h.metrics.bbsCall("crash-actual-lrp", err)
	}
	if err != nil {
		logger.Error("failed-to-report-completed-actual-lrp", "stopped", c.RunResult.Stopped, "error", err.Error())
		if transient(err) {
			return // keep the container: the next sync reports it again
		}
	} else {
		logger.Info("reported-completed-actual-lrp", "stopped", c.RunResult.Stopped, "reason", c.RunResult.FailureReason)
	}
	h.deleteContainer(ctx, c.Guid, logger)
}

// crashLogReadTimeout bounds reading a crashed container's kept lines.
const crashLogReadTimeout = 5 * time.Second

// keepCrashLog hands the last lines of a crashed instance's container to the crash
// log keeper, if there is one, before the container and its lines are deleted. A
// crash reported again (the BBS was unreachable) keeps the same lines again.
func (h *Harmonizer) keepCrashLog(ctx context.Context, c executor.Container, key *modelsv1.ActualLRPKey, logger *slog.Logger) {
	if h.cfg.CrashLogs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, crashLogReadTimeout)
	defer cancel()
	ch, err := h.exec.Logs(ctx, c.Guid, executor.LogOptions{Tail: h.cfg.CrashLogs.MaxLines()})
	if err != nil {
		logger.Error("failed-to-read-crashed-container-logs", "error", err.Error())
		return
	}
	var lines []executor.LogLine
	for l := range ch {
		lines = append(lines, l)
	}
	h.cfg.CrashLogs.Keep(crashlogs.Key{ProcessGuid: key.GetProcessGuid(), Index: key.GetIndex()}, lines)
	logger.Info("kept-crashed-container-logs", "lines", len(lines))
}
