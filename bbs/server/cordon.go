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

// UncordonCell lifts a cell's cordon; lifting none is not an error.
func (s *cellService) UncordonCell(ctx context.Context, req *bbsv1.UncordonCellRequest) (*bbsv1.UncordonCellResponse, error) {
	wasCordoned, err := s.db.UncordonCell(ctx, req.GetCellId())
	if err != nil {
		return nil, err
	}
	s.logger.Info("uncordoned-cell", "cell-id", req.GetCellId(), "was-cordoned", wasCordoned)
	return &bbsv1.UncordonCellResponse{WasCordoned: wasCordoned}, nil
}
