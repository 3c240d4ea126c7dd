package server

import (
	"context"
	"slices"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// RequestAuctions sends what a convergence pass applied with defer_auction to the
// auctioneer: the LRP indices in one request (built from the current scheduling
// infos) and the still-PENDING tasks in another.
func (s *convergenceService) RequestAuctions(ctx context.Context, req *bbsv1.RequestAuctionsRequest) (*bbsv1.RequestAuctionsResponse, error) {
	indices := map[string][]int32{}
	for _, l := range req.GetLrps() {
		indices[l.GetProcessGuid()] = append(indices[l.GetProcessGuid()], l.GetIndices()...)
	}
	sent, err := s.auctionIndices(ctx, indices)
	if err != nil {
		return nil, err
	}
	tasks := s.pendingTasks(ctx, req.GetTaskGuids())
	s.auctionTask(ctx, tasks...)
	return &bbsv1.RequestAuctionsResponse{LrpIndices: int32(sent), Tasks: int32(len(tasks))}, nil
}

// pendingTasks reads the named tasks that are still PENDING, with their definitions;
// gone or moved-on tasks are skipped.
func (s *convergenceService) pendingTasks(ctx context.Context, guids []string) []*modelsv1.Task {
	var out []*modelsv1.Task
	for _, guid := range slices.Compact(slices.Sorted(slices.Values(guids))) {
		task, err := s.db.GetTask(ctx, guid)
		if err != nil || task.GetState() != modelsv1.TaskState_TASK_STATE_PENDING {
			continue
		}
		out = append(out, task)
	}
	return out
}
