package server

import (
	"context"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// GetConvergerStatus says whether convergence is paused, how the last pass went and
// which converger holds the lock.
func (s *convergenceService) GetConvergerStatus(ctx context.Context, _ *bbsv1.GetConvergerStatusRequest) (*bbsv1.GetConvergerStatusResponse, error) {
	return s.db.GetConvergerStatus(ctx)
}

// SetConvergerPaused pauses or resumes the converger's destructive actions and returns
// the status after the change.
func (s *convergenceService) SetConvergerPaused(ctx context.Context, req *bbsv1.SetConvergerPausedRequest) (*bbsv1.SetConvergerPausedResponse, error) {
	status, err := s.db.SetConvergerPaused(ctx, req.GetPaused(), req.GetReason())
	if err != nil {
		return nil, err
	}
	s.logger.Info("set-converger-paused", "paused", req.GetPaused(), "reason", req.GetReason())
	return &bbsv1.SetConvergerPausedResponse{Status: status}, nil
}

// ReportConvergencePass records the summary of a converger's last pass.
func (s *convergenceService) ReportConvergencePass(ctx context.Context, req *bbsv1.ReportConvergencePassRequest) (*bbsv1.ReportConvergencePassResponse, error) {
	if err := s.db.ReportConvergencePass(ctx, req.GetPass()); err != nil {
		return nil, err
	}
	return &bbsv1.ReportConvergencePassResponse{}, nil
}
