package server

import (
	"context"
	"errors"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// stopRetryDelay separates attempts to stop an instance.
const stopRetryDelay = 200 * time.Millisecond

// The side effects below are started by a request whose context is ctx: each runs in
// the background (goBackgroundFor), and waits for a free slot only while ctx lives.

// auctionCreated asks the auctioneer to place the newly created rows of lrp.
func (s *Server) auctionCreated(ctx context.Context, lrp *modelsv1.DesiredLRP, created []*modelsv1.ActualLRP) {
	if s.auctioneer == nil || lrp == nil || len(created) == 0 {
		return
	}
	indices := make([]int32, 0, len(created))
	for _, a := range created {
		indices = append(indices, a.GetIndex())
	}
	s.requestLRPAuction(ctx, models.LRPStartRequest(models.SchedulingInfo(lrp), indices))
}

// auctionRestart asks the auctioneer to place one index of a desired LRP again,
// after a crash with immediate restart.
func (s *Server) auctionRestart(ctx context.Context, processGuid string, index int32) {
	if s.auctioneer == nil {
		return
	}
	s.goBackgroundFor(ctx, s.backgroundSem, func(ctx context.Context) {
		ctx, cancel := s.withTimeout(ctx)
		defer cancel()
		infos, err := s.db.ListSchedulingInfos(ctx, store.DesiredLRPFilter{ProcessGuids: []string{processGuid}})
		if err != nil || len(infos) == 0 {
			s.logger.Error("failed-to-fetch-scheduling-info-for-restart", "process-guid", processGuid, "index", index, "error", err)
			return
		}
		s.sendLRPAuction(ctx, models.LRPStartRequest(infos[0], []int32{index}))
	})
}

// requestLRPAuction sends LRP start requests to the auctioneer in one call, in the
// background.
func (s *Server) requestLRPAuction(ctx context.Context, reqs ...*modelsv1.LRPStartRequest) {
	if s.auctioneer == nil || len(reqs) == 0 {
		return
	}
	s.goBackgroundFor(ctx, s.backgroundSem, func(ctx context.Context) {
		ctx, cancel := s.withTimeout(ctx)
		defer cancel()
		s.sendLRPAuction(ctx, reqs...)
	})
}

func (s *Server) sendLRPAuction(ctx context.Context, reqs ...*modelsv1.LRPStartRequest) {
	_, err := s.auctioneer.RequestLRPAuctions(ctx, &auctioneerv1.RequestLRPAuctionsRequest{Requests: reqs})
	for _, req := range reqs {
		if err != nil {
			s.logger.Error("failed-to-request-lrp-auction", "process-guid", req.GetProcessGuid(), "indices", req.GetIndices(), "error", err)
			continue
		}
		s.logger.Debug("requested-lrp-auction", "process-guid", req.GetProcessGuid(), "indices", req.GetIndices())
	}
}

// auctionTask asks the auctioneer to place PENDING tasks, all in one request.
func (s *Server) auctionTask(ctx context.Context, tasks ...*modelsv1.Task) {
	reqs := make([]*modelsv1.TaskStartRequest, 0, len(tasks))
	for _, task := range tasks {
		if task != nil {
			reqs = append(reqs, models.TaskStartRequest(task))
		}
	}
	if s.auctioneer == nil || len(reqs) == 0 {
		return
	}
	s.goBackgroundFor(ctx, s.backgroundSem, func(ctx context.Context) {
		ctx, cancel := s.withTimeout(ctx)
		defer cancel()
		_, err := s.auctioneer.RequestTaskAuctions(ctx, &auctioneerv1.RequestTaskAuctionsRequest{Requests: reqs})
		for _, req := range reqs {
			if err != nil {
				s.logger.Error("failed-to-request-task-auction", "task-guid", req.GetTaskGuid(), "error", err)
				continue
			}
			s.logger.Debug("requested-task-auction", "task-guid", req.GetTaskGuid())
		}
	})
}

// stopActualLRPs stops placed instances in the background, attempts times each.
func (s *Server) stopActualLRPs(ctx context.Context, lrps []*modelsv1.ActualLRP, attempts int) {
	for _, lrp := range lrps {
		s.goBackgroundFor(ctx, s.backgroundSem, func(ctx context.Context) {
			s.stopActualLRP(ctx, lrp, attempts)
		})
	}
}

// stopActualLRP asks the rep of the instance's cell to stop it; if the cell is gone
// the ordinary row is deleted instead. Failures are logged and left to convergence.
func (s *Server) stopActualLRP(ctx context.Context, lrp *modelsv1.ActualLRP, attempts int) {
	logger := s.logger.With("process-guid", lrp.GetProcessGuid(), "index", lrp.GetIndex(),
		"instance-guid", lrp.GetInstanceGuid(), "cell-id", lrp.GetCellId())
	for attempt := 1; ; attempt++ {
		err := s.tryStopActualLRP(ctx, lrp)
		if err == nil {
			return
		}
		logger.Error("failed-to-stop-actual-lrp", "attempt", attempt, "error", err)
		if attempt >= attempts {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(stopRetryDelay):
		}
	}
}

func (s *Server) tryStopActualLRP(ctx context.Context, lrp *modelsv1.ActualLRP) error {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	cell, err := s.db.GetCell(ctx, lrp.GetCellId())
	if errors.Is(err, models.ErrResourceNotFound) {
		return s.removeOnMissingCell(ctx, lrp)
	}
	if err != nil {
		return err
	}
	rep, err := s.repClient(cell)
	if err != nil {
		return err
	}
	_, err = rep.StopLRPInstance(ctx, &repv1.StopLRPInstanceRequest{
		ProcessGuid:  lrp.GetProcessGuid(),
		Index:        lrp.GetIndex(),
		InstanceGuid: lrp.GetInstanceGuid(),
	})
	if err == nil {
		s.logger.Info("asked-rep-to-stop-actual-lrp", "process-guid", lrp.GetProcessGuid(), "index", lrp.GetIndex(), "cell-id", cell.GetCellId())
	}
	return err
}

// removeOnMissingCell deletes the ordinary row of an instance whose cell is gone.
// Copies in other presences are left to convergence.
func (s *Server) removeOnMissingCell(ctx context.Context, lrp *modelsv1.ActualLRP) error {
	switch lrp.GetPresence() {
	case modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY, modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED:
	default:
		return nil
	}
	ik := &modelsv1.ActualLRPInstanceKey{InstanceGuid: lrp.GetInstanceGuid(), CellId: lrp.GetCellId()}
	_, err := s.db.RemoveActualLRP(ctx, lrp.GetProcessGuid(), lrp.GetIndex(), ik)
	if err != nil && !errors.Is(err, models.ErrResourceNotFound) {
		return err
	}
	s.logger.Info("removed-actual-lrp-of-missing-cell", "process-guid", lrp.GetProcessGuid(), "index", lrp.GetIndex(), "cell-id", lrp.GetCellId())
	return nil
}

// cancelTaskOnCell asks the rep of the task's cell to stop it, in the background.
func (s *Server) cancelTaskOnCell(ctx context.Context, task *modelsv1.Task) {
	if task.GetCellId() == "" {
		return
	}
	s.goBackgroundFor(ctx, s.backgroundSem, func(ctx context.Context) {
		ctx, cancel := s.withTimeout(ctx)
		defer cancel()
		logger := s.logger.With("task-guid", task.GetTaskGuid(), "cell-id", task.GetCellId())
		cell, err := s.db.GetCell(ctx, task.GetCellId())
		if errors.Is(err, models.ErrResourceNotFound) {
			logger.Info("task-cell-gone-skipping-cancel")
			return
		}
		if err == nil {
			var rep repv1.RepServiceClient
			if rep, err = s.repClient(cell); err == nil {
				_, err = rep.CancelTask(ctx, &repv1.CancelTaskRequest{TaskGuid: task.GetTaskGuid()})
			}
		}
		if err != nil {
			logger.Error("failed-to-cancel-task-on-cell", "error", err)
			return
		}
		logger.Info("asked-rep-to-cancel-task")
	})
}

// repClient returns the client of a cell's rep.
func (s *Server) repClient(cell *modelsv1.CellPresence) (repv1.RepServiceClient, error) {
	if s.reps == nil {
		return nil, errors.New("no rep client pool configured")
	}
	return s.reps.For(cell)
}
