package handlers

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"drover.dev/executor"
	"drover.dev/lib/authz"
	"drover.dev/lib/authz/authztest"
	"drover.dev/lib/grpcserver"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/evacuation"
	"drover.dev/rep/internal/fakeexec"
)

// TestPolicyHasARuleForEveryMethod: a new RPC without a rule fails here (and would be
// refused at run time).
func TestPolicyHasARuleForEveryMethod(t *testing.T) {
	srv, _ := grpcserver.NewServer(nil)
	New(testCell, fakeexec.New(executor.Resources{}), nil, nil).Register(srv)
	require.Empty(t, Policy().Unruled(authz.ServerMethods(srv)))
	require.Empty(t, Policy().Unruled(authz.PackageMethods("drover.rep.v1")))
	require.Len(t, authz.PackageMethods("drover.rep.v1"), 9)
}

// TestRepAuthorisationTable is issue 12's acceptance 2 for the rep: every RPC as every
// identity over real mTLS. Only the BBS, the auctioneer and operators may change what
// runs on the cell; a cell's certificate (another rep's, or this cell's own) and the
// route-emitter's get PermissionDenied.
func TestRepAuthorisationTable(t *testing.T) {
	ca := authztest.NewCA(t)
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
	api := New(testCell, e, evacuation.NewState(nil), nil)
	addr := ca.Serve(Policy(), api.Register)
	t.Cleanup(api.Wait)

	rep := func(call func(ctx context.Context, c repv1.RepServiceClient) error) func(context.Context, *grpc.ClientConn) error {
		return func(ctx context.Context, conn *grpc.ClientConn) error {
			return call(ctx, repv1.NewRepServiceClient(conn))
		}
	}
	for _, tc := range []struct {
		method  string
		allowed []string
		call    func(ctx context.Context, conn *grpc.ClientConn) error
	}{
		{repv1.RepService_State_FullMethodName, []string{"operator", "bbs", "auctioneer"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			_, err := c.State(ctx, &repv1.StateRequest{})
			return err
		})},
		{repv1.RepService_Perform_FullMethodName, []string{"operator", "auctioneer"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			_, err := c.Perform(ctx, &repv1.PerformRequest{CellId: "cell-1", Lrps: []*repv1.LRPWork{lrpWork("pg-x", 0, 10, "preloaded:busybox")}})
			return err
		})},
		{repv1.RepService_StopLRPInstance_FullMethodName, []string{"operator", "bbs"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			_, err := c.StopLRPInstance(ctx, &repv1.StopLRPInstanceRequest{InstanceGuid: "absent"})
			return err
		})},
		{repv1.RepService_CancelTask_FullMethodName, []string{"operator", "bbs"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			_, err := c.CancelTask(ctx, &repv1.CancelTaskRequest{TaskGuid: "absent"})
			return err
		})},
		{repv1.RepService_Ping_FullMethodName, authztest.Everyone, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			_, err := c.Ping(ctx, &repv1.PingRequest{})
			return err
		})},
		{repv1.RepService_StreamLogs_FullMethodName, []string{"operator"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			stream, err := c.StreamLogs(ctx, &repv1.StreamLogsRequest{TaskGuid: "absent"})
			if err != nil {
				return err
			}
			if _, err := stream.Recv(); err != io.EOF {
				return err
			}
			return nil
		})},
		{repv1.RepService_StreamLogs_FullMethodName, []string{"operator", "stager"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			stream, err := c.StreamLogs(ctx, &repv1.StreamLogsRequest{TaskGuid: "staging-absent"})
			if err != nil {
				return err
			}
			if _, err := stream.Recv(); err != io.EOF {
				return err
			}
			return nil
		})},
		{repv1.RepService_ContainerMetrics_FullMethodName, []string{"operator"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			_, err := c.ContainerMetrics(ctx, &repv1.ContainerMetricsRequest{})
			return err
		})},
		// Exec: only operators (the server here has no WithExec: Unimplemented, not PermissionDenied).
		{repv1.RepService_Exec_FullMethodName, []string{"operator"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			stream, err := c.Exec(ctx)
			if err != nil {
				return err
			}
			_ = stream.Send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_Start{Start: &repv1.ExecStart{ProcessGuid: "absent", Args: []string{"sh"}}}})
			_ = stream.CloseSend()
			_, err = stream.Recv()
			return err
		})},
		// Evacuate after Perform: it starts draining the cell.
		{repv1.RepService_Evacuate_FullMethodName, []string{"operator"}, rep(func(ctx context.Context, c repv1.RepServiceClient) error {
			_, err := c.Evacuate(ctx, &repv1.EvacuateRequest{})
			return err
		})},
		{healthpb.Health_Check_FullMethodName, authztest.Everyone, func(ctx context.Context, conn *grpc.ClientConn) error {
			_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		}},
	} {
		t.Run(tc.method, func(t *testing.T) { ca.RequireAllowed(t, addr, tc.method, tc.allowed, tc.call) })
	}
	containers, err := e.List(ctxT(t))
	require.NoError(t, err)
	require.Len(t, containers, 2, "only the two allowed Performs (operator, auctioneer) placed work")
}
