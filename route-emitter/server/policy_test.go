package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"drover.dev/lib/authz"
	"drover.dev/lib/authz/authztest"
	"drover.dev/lib/grpcserver"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
	"drover.dev/route-emitter/routingtable"
	"drover.dev/route-emitter/watcher"
)

type emptyTable struct{}

func (emptyTable) Routes(routingtable.Filter) []*routeemitterv1.Route { return nil }
func (emptyTable) Status() watcher.Status                             { return watcher.Status{Active: true} }

type fakeNATS struct{}

func (fakeNATS) RegisterIntervalSeconds() int32 { return 20 }
func (fakeNATS) Connected() bool                { return true }

// TestPolicyHasARuleForEveryMethod: a new RPC without a rule fails here.
func TestPolicyHasARuleForEveryMethod(t *testing.T) {
	srv, _ := grpcserver.NewServer(nil)
	routeemitterv1.RegisterRouteEmitterServiceServer(srv, New(emptyTable{}, fakeNATS{}, ""))
	require.Empty(t, Policy().Unruled(authz.ServerMethods(srv)))
	require.Empty(t, Policy().Unruled(authz.PackageMethods("drover.routeemitter.v1")))
}

// TestRouteEmitterAuthorisationTable: only operators read the routing table.
func TestRouteEmitterAuthorisationTable(t *testing.T) {
	ca := authztest.NewCA(t)
	addr := ca.Serve(Policy(), func(s *grpc.Server) {
		routeemitterv1.RegisterRouteEmitterServiceServer(s, New(emptyTable{}, fakeNATS{}, ""))
	})
	ca.RequireAllowed(t, addr, routeemitterv1.RouteEmitterService_ListRoutes_FullMethodName, []string{"operator"},
		func(ctx context.Context, conn *grpc.ClientConn) error {
			_, err := routeemitterv1.NewRouteEmitterServiceClient(conn).ListRoutes(ctx, &routeemitterv1.ListRoutesRequest{})
			return err
		})
}
