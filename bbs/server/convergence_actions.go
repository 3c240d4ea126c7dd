package server

import (
	"context"
	"maps"
	"slices"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ApplyLRPActions applies each action in its own transaction, in order, and reports one
// result per action. Afterwards placed rows to retire are stopped by their reps and the
// created, unclaimed and replacement indices are auctioned in one request.
func (s *convergenceService) ApplyLRPActions(ctx context.Context, req *bbsv1.ApplyLRPActionsRequest) (*bbsv1.ApplyLRPActionsResponse, error) {
	results := make([]*bbsv1.LRPActionResult, 0, len(req.GetActions()))
	auctions := map[string][]int32{}
	var toStop []*modelsv1.ActualLRP
	for _, action := range req.GetActions() {
		outcome, err := s.db.ApplyLRPAction(ctx, action)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			outcome = &store.LRPActionOutcome{Refused: err.Error()}
		}
		s.logConvergenceAction("lrp", action, action.GetReason(), outcome.Refused)
		results = append(results, &bbsv1.LRPActionResult{Applied: outcome.Refused == "", RefusedReason: outcome.Refused})
		if k := outcome.Auction; k != nil {
			auctions[k.GetProcessGuid()] = append(auctions[k.GetProcessGuid()], k.GetIndex())
		}
		if outcome.ToStop != nil {
			toStop = append(toStop, outcome.ToStop)
		}
	}
	s.stopActualLRPs(ctx, toStop, RetireActualLRPAttempts)
	if req.GetDeferAuction() {
		return &bbsv1.ApplyLRPActionsResponse{Results: results}, nil
	}
	if _, err := s.auctionIndices(ctx, auctions); err != nil {
		s.logger.Error("failed-to-fetch-scheduling-infos-for-convergence", "error", err)
	}
	return &bbsv1.ApplyLRPActionsResponse{Results: results}, nil
}

// auctionIndices sends one auction request for the given indices, with one start
// request per process guid built from the current scheduling infos; indices of gone
// DesiredLRPs are skipped. It returns how many indices it sent.
func (s *Server) auctionIndices(ctx context.Context, indices map[string][]int32) (int, error) {
	if s.auctioneer == nil || len(indices) == 0 {
		return 0, nil
	}
	guids := slices.Sorted(maps.Keys(indices))
	infos, err := s.db.ListSchedulingInfos(ctx, store.DesiredLRPFilter{ProcessGuids: guids})
	if err != nil {
		return 0, err
	}
	reqs := make([]*modelsv1.LRPStartRequest, 0, len(infos))
	sent := 0
	for _, si := range infos {
		idx := slices.Clone(indices[si.GetProcessGuid()])
		slices.Sort(idx)
		idx = slices.Compact(idx)
		sent += len(idx)
		reqs = append(reqs, models.LRPStartRequest(si, idx))
	}
	s.requestLRPAuction(ctx, reqs...)
	return sent, nil
}
