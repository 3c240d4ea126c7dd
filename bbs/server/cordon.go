package server

import (
	"context"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// CordonCell makes a cell take no new work, keeping what runs there; cordoning a
// cordoned cell updates the reason.
func (s *cellService) CordonCell(ctx context.Context, req *bbsv1.CordonCellRequest) (*bbsv1.CordonCellResponse, error) {
	if err := s.db.CordonCell(ctx, req.GetCellId(), req.GetReason()); err != nil {
		return nil, err
	}
	s.logger.Info("cordoned-cell", "cell-id", req.GetCellId(), "reason", req.GetReason())
	return &bbsv1.CordonCellResponse{}, nil
}

// MaxUncordonAuctions bounds how many unplaced instances, and how many pending tasks,
// an uncordon sends to the auctioneer at once; the converger's stale-unclaimed and
// pending-task passes place the rest.
const MaxUncordonAuctions = 10000

// UncordonCell lifts a cell's cordon; lifting none is not an error. Lifting one asks
// the auctioneer at once to place the instances that failed placement and the pending
// tasks, instead of leaving them to the converger's next pass.
func (s *cellService) UncordonCell(ctx context.Context, req *bbsv1.UncordonCellRequest) (*bbsv1.UncordonCellResponse, error) {
	wasCordoned, err := s.db.UncordonCell(ctx, req.GetCellId())
	if err != nil {
		return nil, err
	}
	s.logger.Info("uncordoned-cell", "cell-id", req.GetCellId(), "was-cordoned", wasCordoned)
	if wasCordoned {
		s.auctionUnplaced(ctx, req.GetCellId())
	}
	return &bbsv1.UncordonCellResponse{WasCordoned: wasCordoned}, nil
}

// auctionUnplaced sends the unplaced work (store.CordonDB.ListUnplaced) to the
// auctioneer in the background, as desiring does for new instances.
func (s *Server) auctionUnplaced(ctx context.Context, cellID string) {
	if s.auctioneer == nil {
		return
	}
	s.goBackgroundFor(ctx, s.backgroundSem, func(ctx context.Context) {
		ctx, cancel := s.withTimeout(ctx)
		defer cancel()
		lrps, tasks, err := s.db.ListUnplaced(ctx, MaxUncordonAuctions)
		if err != nil {
			s.logger.Error("failed-to-list-unplaced-work", "cell-id", cellID, "error", err)
			return
		}
		indices := map[string][]int32{}
		for _, lrp := range lrps {
			indices[lrp.GetProcessGuid()] = append(indices[lrp.GetProcessGuid()], lrp.GetIndex())
		}
		sent, err := s.auctionIndices(ctx, indices)
		if err != nil {
			s.logger.Error("failed-to-auction-unplaced-lrps", "cell-id", cellID, "error", err)
		}
		s.auctionTask(ctx, tasks...)
		s.logger.Info("requested-auctions-after-uncordon", "cell-id", cellID, "lrp-indices", sent, "tasks", len(tasks))
	})
}
