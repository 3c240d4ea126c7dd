// Package server is the route-emitter's gRPC RouteEmitterService: ListRoutes shows the
// routing table and the emitter's state.
package server

import (
	"context"

	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
	"drover.dev/route-emitter/routingtable"
	"drover.dev/route-emitter/watcher"
)

// Table is what ListRoutes reads.
type Table interface {
	Routes(routingtable.Filter) []*routeemitterv1.Route
	Status() watcher.Status
}

// NATS is what ListRoutes reports of the NATS side.
type NATS interface {
	RegisterIntervalSeconds() int32
	Connected() bool
}

// Service implements routeemitterv1.RouteEmitterServiceServer.
type Service struct {
	routeemitterv1.UnimplementedRouteEmitterServiceServer
	table  Table
	nats   NATS
	cellID string
}

// New returns the service; cellID is set in local mode.
func New(table Table, nats NATS, cellID string) *Service {
	return &Service{table: table, nats: nats, cellID: cellID}
}

// ListRoutes lists the table, filtered and sorted, with the emitter's state.
func (s *Service) ListRoutes(_ context.Context, req *routeemitterv1.ListRoutesRequest) (*routeemitterv1.ListRoutesResponse, error) {
	st := s.table.Status()
	mode := "global"
	if s.cellID != "" {
		mode = "local"
	}
	return &routeemitterv1.ListRoutesResponse{
		Routes:                  s.table.Routes(routingtable.Filter{ProcessGUID: req.GetProcessGuid(), Hostname: req.GetHostname()}),
		Mode:                    mode,
		CellId:                  s.cellID,
		Active:                  st.Active,
		LastEventSequence:       st.LastSequence,
		LastSyncAt:              st.LastSyncAt,
		RegisterIntervalSeconds: s.nats.RegisterIntervalSeconds(),
		NatsConnected:           s.nats.Connected(),
	}, nil
}
