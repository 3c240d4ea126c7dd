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
	if req.GetActualLrpInstanceKey() == nil {
		return nil, missing("actual_lrp_instance_key")
	}
	if _, err := s.dbFor(ctx).ClaimActualLRP(ctx, req.GetProcessGuid(), req.GetIndex(), req.GetActualLrpInstanceKey()); err != nil {
		return nil, err
	}
	return &bbsv1.ClaimActualLRPResponse{}, nil
}

// StartActualLRP moves an instance to RUNNING; routable defaults to true.
func (s *actualLRPService) StartActualLRP(ctx context.Context, req *bbsv1.StartActualLRPRequest) (*bbsv1.StartActualLRPResponse, error) {
	if err := requireKeys(req.GetActualLrpKey(), req.GetActualLrpInstanceKey()); err != nil {
		return nil, err
	}
	if req.GetActualLrpNetInfo() == nil {
		return nil, missing("actual_lrp_net_info")
	}
	opts := startOptions(req.Routable, req.GetInternalRoutes(), req.GetMetricTags(), req.GetAvailabilityZone())
	if _, err := s.dbFor(ctx).StartActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey(), req.GetActualLrpNetInfo(), opts); err != nil {
		return nil, err
	}
	return &bbsv1.StartActualLRPResponse{}, nil
}

// CrashActualLRP records a crash and auctions the instance again if it restarts at once.
func (s *actualLRPService) CrashActualLRP(ctx context.Context, req *bbsv1.CrashActualLRPRequest) (*bbsv1.CrashActualLRPResponse, error) {
	if err := requireKeys(req.GetActualLrpKey(), req.GetActualLrpInstanceKey()); err != nil {
		return nil, err
	}
	result, err := s.dbFor(ctx).CrashActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey(), req.GetErrorMessage())
	if err != nil {
		return nil, err
	}
	if result.Restart {
		s.auctionRestart(req.GetActualLrpKey().GetProcessGuid(), req.GetActualLrpKey().GetIndex())
	}
	return &bbsv1.CrashActualLRPResponse{}, nil
}

// FailActualLRP records a placement error.
func (s *actualLRPService) FailActualLRP(ctx context.Context, req *bbsv1.FailActualLRPRequest) (*bbsv1.FailActualLRPResponse, error) {
	if req.GetActualLrpKey() == nil {
		return nil, missing("actual_lrp_key")
	}
	if _, err := s.dbFor(ctx).FailActualLRP(ctx, req.GetActualLrpKey(), req.GetErrorMessage()); err != nil {
		return nil, err
	}
	return &bbsv1.FailActualLRPResponse{}, nil
}

// RemoveActualLRP deletes the ordinary row, matching the instance key if one is given.
func (s *actualLRPService) RemoveActualLRP(ctx context.Context, req *bbsv1.RemoveActualLRPRequest) (*bbsv1.RemoveActualLRPResponse, error) {
	if _, err := s.dbFor(ctx).RemoveActualLRP(ctx, req.GetProcessGuid(), req.GetIndex(), req.GetActualLrpInstanceKey()); err != nil {
		return nil, err
	}
	return &bbsv1.RemoveActualLRPResponse{}, nil
}

// RetireActualLRP kills the ordinary instance of an index: an unplaced row is deleted;
// a placed one is stopped by its rep (or deleted if its cell is gone) in the background.
func (s *actualLRPService) RetireActualLRP(ctx context.Context, req *bbsv1.RetireActualLRPRequest) (*bbsv1.RetireActualLRPResponse, error) {
	key := req.GetActualLrpKey()
	if key == nil {
		return nil, missing("actual_lrp_key")
	}
	lrp, err := s.dbFor(ctx).GetActualLRP(ctx, key.GetProcessGuid(), key.GetIndex(), modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY)
	if err != nil {
		return nil, err
	}
	switch lrp.GetState() {
	case modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING:
		s.stopActualLRPs([]*modelsv1.ActualLRP{lrp}, RetireActualLRPAttempts)
	default:
		if _, err := s.dbFor(ctx).RemoveActualLRP(ctx, lrp.GetProcessGuid(), lrp.GetIndex(), nil); err != nil {
			return nil, err
		}
	}
	return &bbsv1.RetireActualLRPResponse{}, nil
}

// requireKeys checks that a lifecycle request names the row and the instance.
func requireKeys(key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey) error {
	if key == nil {
		return missing("actual_lrp_key")
	}
	if ik == nil {
		return missing("actual_lrp_instance_key")
	}
	return nil
}
