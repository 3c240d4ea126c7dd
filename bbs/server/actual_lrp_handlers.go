package server

import (
	"context"

	"google.golang.org/grpc"

	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// actualLRPService implements bbsv1.ActualLRPServiceServer.
type actualLRPService struct {
	bbsv1.UnimplementedActualLRPServiceServer
	*Server
}

// ListActualLRPs streams the matching rows in batches of ListActualLRPsBatchSize.
func (s *actualLRPService) ListActualLRPs(req *bbsv1.ListActualLRPsRequest, stream grpc.ServerStreamingServer[bbsv1.ListActualLRPsResponse]) error {
	rows, err := s.dbFor(stream.Context()).ListActualLRPs(stream.Context(), store.ActualLRPFilter{
		Domain:      req.GetDomain(),
		CellID:      req.GetCellId(),
		ProcessGuid: req.GetProcessGuid(),
		Index:       req.Index,
	})
	if err != nil {
		return err
	}
	for start := 0; start < len(rows); start += ListActualLRPsBatchSize {
		end := min(start+ListActualLRPsBatchSize, len(rows))
		if err := stream.Send(&bbsv1.ListActualLRPsResponse{ActualLrps: rows[start:end]}); err != nil {
			return err
		}
	}
	return nil
}

// ClaimActualLRP moves an instance to CLAIMED.
func (s *actualLRPService) ClaimActualLRP(ctx context.Context, req *bbsv1.ClaimActualLRPRequest) (*bbsv1.ClaimActualLRPResponse, error) {
	if _, err := s.dbFor(ctx).ClaimActualLRP(ctx, req.GetProcessGuid(), req.GetIndex(), req.GetActualLrpInstanceKey()); err != nil {
		return nil, err
	}
	return &bbsv1.ClaimActualLRPResponse{}, nil
}

// StartActualLRP moves an instance to RUNNING; routable defaults to true.
func (s *actualLRPService) StartActualLRP(ctx context.Context, req *bbsv1.StartActualLRPRequest) (*bbsv1.StartActualLRPResponse, error) {
	opts := startOptions(req.Routable, req.GetInternalRoutes(), req.GetMetricTags(), req.GetAvailabilityZone())
	if _, err := s.dbFor(ctx).StartActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey(), req.GetActualLrpNetInfo(), opts); err != nil {
		return nil, err
	}
	return &bbsv1.StartActualLRPResponse{}, nil
}

// CrashActualLRP records a crash and auctions the instance again if it restarts at once.
func (s *actualLRPService) CrashActualLRP(ctx context.Context, req *bbsv1.CrashActualLRPRequest) (*bbsv1.CrashActualLRPResponse, error) {
	result, err := s.dbFor(ctx).CrashActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey(), req.GetErrorMessage())
	if err != nil {
		return nil, err
	}
	if result.Restart {
		s.auctionRestart(ctx, req.GetActualLrpKey().GetProcessGuid(), req.GetActualLrpKey().GetIndex())
	}
	return &bbsv1.CrashActualLRPResponse{}, nil
}

// FailActualLRP records a placement error.
func (s *actualLRPService) FailActualLRP(ctx context.Context, req *bbsv1.FailActualLRPRequest) (*bbsv1.FailActualLRPResponse, error) {
	if _, err := s.dbFor(ctx).FailActualLRP(ctx, req.GetActualLrpKey(), req.GetErrorMessage()); err != nil {
		return nil, err
	}
	return &bbsv1.FailActualLRPResponse{}, nil
}

// RecordExec records that an operator started a process inside a running instance.
func (s *actualLRPService) RecordExec(ctx context.Context, req *bbsv1.RecordExecRequest) (*bbsv1.RecordExecResponse, error) {
	if err := s.dbFor(ctx).RecordExec(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey(), req.GetUser(), req.GetArgs(), req.GetTty()); err != nil {
		return nil, err
	}
	return &bbsv1.RecordExecResponse{}, nil
}

// RemoveActualLRP deletes the ordinary row, matching the instance key if one is given.
func (s *actualLRPService) RemoveActualLRP(ctx context.Context, req *bbsv1.RemoveActualLRPRequest) (*bbsv1.RemoveActualLRPResponse, error) {
	if _, err := s.dbFor(ctx).RemoveActualLRP(ctx, req.GetProcessGuid(), req.GetIndex(), req.GetActualLrpInstanceKey()); err != nil {
		return nil, err
	}
	return &bbsv1.RemoveActualLRPResponse{}, nil
}

// RetireActualLRP kills the ordinary instance of an index. The store decides in one
// transaction on the row it locked: an unplaced row is deleted; a placed one is
// returned, and the rep of its cell is asked to stop that instance (or the row is
// deleted by its instance key if the cell is gone), in the background.
func (s *actualLRPService) RetireActualLRP(ctx context.Context, req *bbsv1.RetireActualLRPRequest) (*bbsv1.RetireActualLRPResponse, error) {
	key := req.GetActualLrpKey()
	toStop, err := s.dbFor(ctx).RetireActualLRP(ctx, key.GetProcessGuid(), key.GetIndex())
	if err != nil {
		return nil, err
	}
	if toStop != nil {
		s.stopActualLRPs(ctx, []*modelsv1.ActualLRP{toStop}, RetireActualLRPAttempts)
	}
	return &bbsv1.RetireActualLRPResponse{}, nil
}
