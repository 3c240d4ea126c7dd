package server

import (
	"context"

	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// EvacuateClaimedActualLRP hands an unstarted instance of a draining cell back for
// placement elsewhere.
func (s *actualLRPService) EvacuateClaimedActualLRP(ctx context.Context, req *bbsv1.EvacuateClaimedActualLRPRequest) (*bbsv1.EvacuateClaimedActualLRPResponse, error) {
	result, err := s.dbFor(ctx).EvacuateClaimedActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey())
	if err != nil {
		return nil, err
	}
	s.auctionEvacuated(ctx, req.GetActualLrpKey(), result)
	return &bbsv1.EvacuateClaimedActualLRPResponse{KeepContainer: result.KeepContainer}, nil
}

// EvacuateRunningActualLRP keeps a running instance of a draining cell serving while
// its replacement is placed; routable defaults to true as for a start.
func (s *actualLRPService) EvacuateRunningActualLRP(ctx context.Context, req *bbsv1.EvacuateRunningActualLRPRequest) (*bbsv1.EvacuateRunningActualLRPResponse, error) {
	opts := startOptions(req.Routable, req.GetInternalRoutes(), req.GetMetricTags(), req.GetAvailabilityZone())
	result, err := s.dbFor(ctx).EvacuateRunningActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey(), req.GetActualLrpNetInfo(), opts)
	if err != nil {
		return nil, err
	}
	s.auctionEvacuated(ctx, req.GetActualLrpKey(), result)
	return &bbsv1.EvacuateRunningActualLRPResponse{KeepContainer: result.KeepContainer}, nil
}

// EvacuateStoppedActualLRP forgets a stopped instance of a draining cell.
func (s *actualLRPService) EvacuateStoppedActualLRP(ctx context.Context, req *bbsv1.EvacuateStoppedActualLRPRequest) (*bbsv1.EvacuateStoppedActualLRPResponse, error) {
	result, err := s.dbFor(ctx).EvacuateStoppedActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey())
	if err != nil {
		return nil, err
	}
	return &bbsv1.EvacuateStoppedActualLRPResponse{KeepContainer: result.KeepContainer}, nil
}

// EvacuateCrashedActualLRP records a crash on a draining cell and auctions the index
// again when the instance restarts at once.
func (s *actualLRPService) EvacuateCrashedActualLRP(ctx context.Context, req *bbsv1.EvacuateCrashedActualLRPRequest) (*bbsv1.EvacuateCrashedActualLRPResponse, error) {
	result, err := s.dbFor(ctx).EvacuateCrashedActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey(), req.GetErrorMessage())
	if err != nil {
		return nil, err
	}
	s.auctionEvacuated(ctx, req.GetActualLrpKey(), result)
	return &bbsv1.EvacuateCrashedActualLRPResponse{KeepContainer: result.KeepContainer}, nil
}

// RemoveEvacuatingActualLRP deletes the caller's EVACUATING row.
func (s *actualLRPService) RemoveEvacuatingActualLRP(ctx context.Context, req *bbsv1.RemoveEvacuatingActualLRPRequest) (*bbsv1.RemoveEvacuatingActualLRPResponse, error) {
	if _, err := s.dbFor(ctx).RemoveEvacuatingActualLRP(ctx, req.GetActualLrpKey(), req.GetActualLrpInstanceKey()); err != nil {
		return nil, err
	}
	return &bbsv1.RemoveEvacuatingActualLRPResponse{}, nil
}

// auctionEvacuated asks for the placement of an ORDINARY row an evacuation unclaimed.
func (s *Server) auctionEvacuated(ctx context.Context, key *modelsv1.ActualLRPKey, result *store.EvacuationResult) {
	if result.Auction {
		s.auctionRestart(ctx, key.GetProcessGuid(), key.GetIndex())
	}
}

// startOptions are the optional parts of a start or evacuate-running report; routable
// defaults to true when unset.
func startOptions(routable *bool, internalRoutes []string, metricTags map[string]string, zone string) store.StartOptions {
	return store.StartOptions{
		InternalRoutes:   internalRoutes,
		MetricTags:       metricTags,
		Routable:         routable == nil || *routable,
		AvailabilityZone: zone,
	}
}
