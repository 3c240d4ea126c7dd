package commands

import (
	"context"
	"fmt"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// pushBBS is push.BBS on the session's BBS connection, each call bounded by --timeout.
type pushBBS struct{ s *session }

// call runs fn with the client and a context bounded by --timeout.
func (b pushBBS) call(ctx context.Context, fn func(context.Context, *client.Client) error) error {
	c, callCtx, cancel, err := b.s.begin(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return fn(callCtx, c)
}

func (b pushBBS) DesiredLRPs(ctx context.Context, domain string) ([]*modelsv1.DesiredLRP, error) {
	var lrps []*modelsv1.DesiredLRP
	err := b.call(ctx, func(ctx context.Context, c *client.Client) error {
		resp, err := c.ListDesiredLRPs(ctx, &bbsv1.ListDesiredLRPsRequest{Domain: domain})
		lrps = resp.GetDesiredLrps()
		return err
	})
	return lrps, err
}

func (b pushBBS) DesireLRP(ctx context.Context, lrp *modelsv1.DesiredLRP) error {
	return b.call(ctx, func(ctx context.Context, c *client.Client) error {
		_, err := c.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrp})
		return err
	})
}

func (b pushBBS) UpdateDesiredLRP(ctx context.Context, guid string, update *modelsv1.DesiredLRPUpdate) error {
	return b.call(ctx, func(ctx context.Context, c *client.Client) error {
		_, err := c.UpdateDesiredLRP(ctx, &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: update})
		return err
	})
}

func (b pushBBS) RemoveDesiredLRP(ctx context.Context, guid string) error {
	return b.call(ctx, func(ctx context.Context, c *client.Client) error {
		_, err := c.RemoveDesiredLRP(ctx, &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid})
		return err
	})
}

func (b pushBBS) ActualLRPs(ctx context.Context, guid string) ([]*modelsv1.ActualLRP, error) {
	return listActualLRPs(ctx, b.s, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid})
}

// pushLogs follows an instance's lines from its cell's rep (as logs --follow does).
type pushLogs struct{ s *session }

func (l pushLogs) FollowInstance(ctx context.Context, guid string, index int32, cellID string, emit func([]*repv1.LogLine)) error {
	return l.follow(ctx, cellID, &repv1.StreamLogsRequest{ProcessGuid: guid, Index: &index, Follow: true}, emit)
}

// follow streams req from the rep of cellID.
func (l pushLogs) follow(ctx context.Context, cellID string, req *repv1.StreamLogsRequest, emit func([]*repv1.LogLine)) error {
	cells, err := l.s.listCells(ctx)
	if err != nil {
		return err
	}
	for _, cell := range cells {
		if cell.GetCellId() != cellID {
			continue
		}
		rc, err := l.s.dialRep(cell)
		if err != nil {
			return err
		}
		if err := receiveLogs(ctx, rc, req, emit); err != nil {
			return l.s.repError(cell, err)
		}
		return nil
	}
	return fmt.Errorf("cell %s is gone", cellID)
}

// pushRoutes asks the route-emitter at addr for one process guid's routes.
type pushRoutes struct {
	s    *session
	addr string
}

func (r pushRoutes) ListRoutes(ctx context.Context, guid string) ([]*routeemitterv1.Route, error) {
	resp, err := r.s.listRoutes(ctx, r.addr, &routeemitterv1.ListRoutesRequest{ProcessGuid: guid})
	if err != nil {
		return nil, err
	}
	return resp.GetRoutes(), nil
}
