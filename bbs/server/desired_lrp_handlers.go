package server

import (
	"context"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// desiredLRPService implements bbsv1.DesiredLRPServiceServer.
type desiredLRPService struct {
	bbsv1.UnimplementedDesiredLRPServiceServer
	*Server
}

// DesireLRP stores the LRP with its UNCLAIMED instances and asks for their placement.
func (s *desiredLRPService) DesireLRP(ctx context.Context, req *bbsv1.DesireLRPRequest) (*bbsv1.DesireLRPResponse, error) {
	lrp := req.GetDesiredLrp()
	models.PrepareDesiredLRP(lrp)
	change, err := s.dbFor(ctx).DesireLRP(ctx, lrp)
	if err != nil {
		return nil, err
	}
	desired := change.After
	if desired == nil {
		desired = lrp
	}
	s.auctionCreated(ctx, desired, change.Created)
	return &bbsv1.DesireLRPResponse{}, nil
}

// UpdateDesiredLRP applies the update, auctions new instances and stops extra ones.
func (s *desiredLRPService) UpdateDesiredLRP(ctx context.Context, req *bbsv1.UpdateDesiredLRPRequest) (*bbsv1.UpdateDesiredLRPResponse, error) {
	change, err := s.dbFor(ctx).UpdateDesiredLRP(ctx, req.GetProcessGuid(), req.GetUpdate())
	if err != nil {
		return nil, err
	}
	s.auctionCreated(ctx, change.After, change.Created)
	s.stopActualLRPs(ctx, change.ToStop, 1)
	return &bbsv1.UpdateDesiredLRPResponse{}, nil
}

// RemoveDesiredLRP deletes the LRP and stops its placed instances.
func (s *desiredLRPService) RemoveDesiredLRP(ctx context.Context, req *bbsv1.RemoveDesiredLRPRequest) (*bbsv1.RemoveDesiredLRPResponse, error) {
	change, err := s.dbFor(ctx).RemoveDesiredLRP(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	s.stopActualLRPs(ctx, change.ToStop, 1)
	return &bbsv1.RemoveDesiredLRPResponse{}, nil
}

// GetDesiredLRP fetches one LRP, with its image credentials only for a cell (see
// mayReadImageCredentials).
func (s *desiredLRPService) GetDesiredLRP(ctx context.Context, req *bbsv1.GetDesiredLRPRequest) (*bbsv1.GetDesiredLRPResponse, error) {
	lrp, err := s.dbFor(ctx).GetDesiredLRP(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	if !mayReadImageCredentials(ctx) {
		lrp = models.DesiredLRPWithoutImageCredentials(lrp)
	}
	return &bbsv1.GetDesiredLRPResponse{DesiredLrp: lrp}, nil
}

// ListDesiredLRPs lists full LRPs, without their image credentials (only a single
// GetDesiredLRP, as a cell makes it, returns them).
func (s *desiredLRPService) ListDesiredLRPs(ctx context.Context, req *bbsv1.ListDesiredLRPsRequest) (*bbsv1.ListDesiredLRPsResponse, error) {
	lrps, err := s.dbFor(ctx).ListDesiredLRPs(ctx, store.DesiredLRPFilter{Domain: req.GetDomain(), ProcessGuids: req.GetProcessGuids()})
	if err != nil {
		return nil, err
	}
	return &bbsv1.ListDesiredLRPsResponse{DesiredLrps: models.DesiredLRPsWithoutImageCredentials(lrps)}, nil
}

// ListDesiredLRPSchedulingInfos lists the scheduling views.
func (s *desiredLRPService) ListDesiredLRPSchedulingInfos(ctx context.Context, req *bbsv1.ListDesiredLRPSchedulingInfosRequest) (*bbsv1.ListDesiredLRPSchedulingInfosResponse, error) {
	infos, err := s.dbFor(ctx).ListSchedulingInfos(ctx, store.DesiredLRPFilter{Domain: req.GetDomain(), ProcessGuids: req.GetProcessGuids()})
	if err != nil {
		return nil, err
	}
	return &bbsv1.ListDesiredLRPSchedulingInfosResponse{SchedulingInfos: infos}, nil
}

// GetDesiredLRPSchedulingInfo fetches one scheduling view.
func (s *desiredLRPService) GetDesiredLRPSchedulingInfo(ctx context.Context, req *bbsv1.GetDesiredLRPSchedulingInfoRequest) (*bbsv1.GetDesiredLRPSchedulingInfoResponse, error) {
	guid := req.GetProcessGuid()
	infos, err := s.dbFor(ctx).ListSchedulingInfos(ctx, store.DesiredLRPFilter{ProcessGuids: []string{guid}})
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, models.NewError(models.ErrTypeResourceNotFound, "desired lrp %q not found", guid)
	}
	return &bbsv1.GetDesiredLRPSchedulingInfoResponse{SchedulingInfo: infos[0]}, nil
}

// ListDesiredLRPRoutingInfos lists the routing views.
func (s *desiredLRPService) ListDesiredLRPRoutingInfos(ctx context.Context, req *bbsv1.ListDesiredLRPRoutingInfosRequest) (*bbsv1.ListDesiredLRPRoutingInfosResponse, error) {
	infos, err := s.dbFor(ctx).ListRoutingInfos(ctx, req.GetProcessGuids())
	if err != nil {
		return nil, err
	}
	return &bbsv1.ListDesiredLRPRoutingInfosResponse{RoutingInfos: infos}, nil
}
