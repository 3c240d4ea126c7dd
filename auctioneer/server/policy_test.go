package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"drover.dev/lib/authz"
	"drover.dev/lib/authz/authztest"
	"drover.dev/lib/grpcserver"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestPolicyHasARuleForEveryMethod: a new RPC without a rule fails here.
func TestPolicyHasARuleForEveryMethod(t *testing.T) {
	srv, _ := grpcserver.NewServer(nil)
	New(&recordingQueue{}, nil).Register(srv)
	require.Empty(t, Policy().Unruled(authz.ServerMethods(srv)))
	require.Empty(t, Policy().Unruled(authz.PackageMethods("drover.auctioneer.v1")))
}

// TestAuctioneerAuthorisationTable: only the BBS and operators may ask for placements;
// cells, the converger and the route-emitter get PermissionDenied.
func TestAuctioneerAuthorisationTable(t *testing.T) {
	ca := authztest.NewCA(t)
	q := &recordingQueue{}
	api := New(q, nil)
	api.Activate()
	addr := ca.Serve(Policy(), api.Register)

	ca.RequireAllowed(t, addr, auctioneerv1.AuctioneerService_RequestLRPAuctions_FullMethodName, []string{"operator", "bbs"},
		func(ctx context.Context, conn *grpc.ClientConn) error {
			_, err := auctioneerv1.NewAuctioneerServiceClient(conn).RequestLRPAuctions(ctx,
				&auctioneerv1.RequestLRPAuctionsRequest{Requests: []*modelsv1.LRPStartRequest{validLRP()}})
			return err
		})
	ca.RequireAllowed(t, addr, auctioneerv1.AuctioneerService_RequestTaskAuctions_FullMethodName, []string{"operator", "bbs"},
		func(ctx context.Context, conn *grpc.ClientConn) error {
			_, err := auctioneerv1.NewAuctioneerServiceClient(conn).RequestTaskAuctions(ctx,
				&auctioneerv1.RequestTaskAuctionsRequest{Requests: []*modelsv1.TaskStartRequest{validTask()}})
			return err
		})
	require.Len(t, q.lrps, 4, "two indices from each of the two allowed callers")
	require.Len(t, q.tasks, 2)
}
