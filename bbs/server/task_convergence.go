package server

import (
	"context"

	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ApplyTaskActions applies each task action in its own transaction, in order, and
// reports one result per action. Completed tasks' callbacks run (again) in the callback
// pool, and the kicked tasks are sent to the auctioneer in one request at the end
// (unless the caller defers auctions to RequestAuctions).
func (s *convergenceService) ApplyTaskActions(ctx context.Context, req *bbsv1.ApplyTaskActionsRequest) (*bbsv1.ApplyTaskActionsResponse, error) {
	results := make([]*bbsv1.TaskActionResult, 0, len(req.GetActions()))
	var kicked []*modelsv1.Task
	for _, action := range req.GetActions() {
		outcome, err := s.db.ApplyTaskAction(ctx, action)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			outcome = &store.TaskActionOutcome{Refused: err.Error()}
		}
		s.logConvergenceAction("task", action, action.GetReason(), outcome.Refused)
		results = append(results, &bbsv1.TaskActionResult{Applied: outcome.Refused == "", RefusedReason: outcome.Refused})
		if outcome.Auction != nil {
			kicked = append(kicked, outcome.Auction)
		}
		if outcome.Callback != nil {
			s.completeTaskCallback(outcome.Callback)
		}
	}
	if !req.GetDeferAuction() {
		s.auctionTask(ctx, kicked...)
	}
	return &bbsv1.ApplyTaskActionsResponse{Results: results}, nil
}

// logConvergenceAction logs one line per convergence action of a kind ("lrp", "task"):
// which action of its oneof, why the converger decided it and what became of it.
func (s *convergenceService) logConvergenceAction(kind string, action proto.Message, reason, refused string) {
	name := "unknown"
	m := action.ProtoReflect()
	if oneof := m.Descriptor().Oneofs().ByName("action"); oneof != nil {
		if f := m.WhichOneof(oneof); f != nil {
			name = string(f.Name())
		}
	}
	if refused != "" {
		s.logger.Info("refused-"+kind+"-action", "action", name, "reason", reason, "refused", refused)
		return
	}
	s.logger.Info("applied-"+kind+"-action", "action", name, "reason", reason)
}
