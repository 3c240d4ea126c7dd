package server_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	"drover.dev/bbs/server"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestUnaryInterceptor(t *testing.T) {
	intercept := server.UnaryInterceptor(testLogger())
	info := &grpc.UnaryServerInfo{FullMethod: "/drover.bbs.v1.TaskService/GetTask"}
	valid := &bbsv1.GetTaskRequest{TaskGuid: "t"}

	cases := []struct {
		name        string
		req         any
		handlerErr  error
		panics      bool
		wantCode    codes.Code
		wantMessage string
		wantCalled  bool
	}{
		{name: "valid request passes", req: valid, wantCode: codes.OK, wantCalled: true},
		{name: "invalid request never reaches the handler", req: &bbsv1.GetTaskRequest{}, wantCode: codes.InvalidArgument, wantMessage: "task_guid"},
		{name: "invalid desired lrp names the field", req: &bbsv1.DesireLRPRequest{DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "x y"}}, wantCode: codes.InvalidArgument, wantMessage: "process_guid"},
		{name: "typed error converts itself", req: valid, handlerErr: models.ErrResourceNotFound, wantCode: codes.NotFound, wantCalled: true},
		{name: "wrapped typed error converts itself", req: valid, handlerErr: errWrap(models.ErrLockCollision), wantCode: codes.Aborted, wantCalled: true},
		{name: "status passes", req: valid, handlerErr: status.Error(codes.Unavailable, "later"), wantCode: codes.Unavailable, wantMessage: "later", wantCalled: true},
		{name: "context cancellation", req: valid, handlerErr: context.Canceled, wantCode: codes.Canceled, wantCalled: true},
		{name: "context deadline", req: valid, handlerErr: errWrap(context.DeadlineExceeded), wantCode: codes.DeadlineExceeded, wantCalled: true},
		{name: "unknown error gets a safe message", req: valid, handlerErr: errors.New("pq: password=secret"), wantCode: codes.Unknown, wantMessage: "internal error", wantCalled: true},
		{name: "panic becomes Internal", req: valid, panics: true, wantCode: codes.Internal, wantMessage: "internal error", wantCalled: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			handler := func(context.Context, any) (any, error) {
				called = true
				if tc.panics {
					panic("boom")
				}
				return &bbsv1.GetTaskResponse{}, tc.handlerErr
			}
			_, err := intercept(context.Background(), tc.req, info, handler)
			require.Equal(t, tc.wantCalled, called)
			st, ok := status.FromError(err)
			require.True(t, ok, "every error is a status: %v", err)
			require.Equal(t, tc.wantCode, st.Code(), "error: %v", err)
			require.Contains(t, st.Message(), tc.wantMessage)
			require.NotContains(t, st.Message(), "secret")
		})
	}
}

// fakeStream is a server stream that receives one given request.
type fakeStream struct {
	grpc.ServerStream
	req *bbsv1.RetireActualLRPRequest
}

func (f *fakeStream) Context() context.Context { return context.Background() }

func (f *fakeStream) RecvMsg(m any) error {
	*m.(*bbsv1.RetireActualLRPRequest) = bbsv1.RetireActualLRPRequest{ActualLrpKey: f.req.GetActualLrpKey()}
	return nil
}

func TestStreamInterceptor(t *testing.T) {
	intercept := server.StreamInterceptor(testLogger())
	info := &grpc.StreamServerInfo{FullMethod: bbsv1.ActualLRPService_RetireActualLRP_FullMethodName, IsServerStream: true}
	// handler mimics generated code: receive the request, then serve it.
	handler := func(served *bool, panics bool) grpc.StreamHandler {
		return func(_ any, ss grpc.ServerStream) error {
			var req bbsv1.RetireActualLRPRequest
			if err := ss.RecvMsg(&req); err != nil {
				return err
			}
			*served = true
			if panics {
				panic("boom")
			}
			return errors.New("raw failure")
		}
	}

	t.Run("invalid request is refused before the handler serves it", func(t *testing.T) {
		served := false
		err := intercept(nil, &fakeStream{req: &bbsv1.RetireActualLRPRequest{}}, info, handler(&served, false))
		require.False(t, served)
		require.Equal(t, codes.InvalidArgument, status.Code(err))
	})

	valid := &bbsv1.RetireActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "p"}}
	t.Run("raw errors become Unknown", func(t *testing.T) {
		served := false
		err := intercept(nil, &fakeStream{req: valid}, info, handler(&served, false))
		require.True(t, served)
		require.Equal(t, codes.Unknown, status.Code(err))
		require.Equal(t, "internal error", status.Convert(err).Message())
	})

	t.Run("panics become Internal", func(t *testing.T) {
		served := false
		err := intercept(nil, &fakeStream{req: valid}, info, handler(&served, true))
		require.True(t, served)
		require.Equal(t, codes.Internal, status.Code(err))
	})

	t.Run("requests of other services are theirs to check", func(t *testing.T) {
		served := false
		other := &grpc.StreamServerInfo{FullMethod: "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", IsServerStream: true}
		err := intercept(nil, &fakeStream{req: &bbsv1.RetireActualLRPRequest{}}, other, handler(&served, false))
		require.True(t, served)
		require.Equal(t, codes.Unknown, status.Code(err), "the handler's raw error, not a validation refusal")
	})
}

// TestUnaryInterceptorValidatesOnlyBBSMethods: the health and reflection services share
// the BBS's gRPC servers; their requests are not drover.bbs.v1 requests, which
// ValidateRequest refuses as unknown types, and pass to their handlers unchecked.
func TestUnaryInterceptorValidatesOnlyBBSMethods(t *testing.T) {
	intercept := server.UnaryInterceptor(testLogger())
	called := false
	handler := func(context.Context, any) (any, error) {
		called = true
		return &healthpb.HealthCheckResponse{}, nil
	}
	_, err := intercept(context.Background(), &healthpb.HealthCheckRequest{},
		&grpc.UnaryServerInfo{FullMethod: healthpb.Health_Check_FullMethodName}, handler)
	require.NoError(t, err)
	require.True(t, called)

	called = false
	_, err = intercept(context.Background(), &healthpb.HealthCheckRequest{},
		&grpc.UnaryServerInfo{FullMethod: bbsv1.TaskService_GetTask_FullMethodName}, handler)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "unknown request type grpc.health.v1.HealthCheckRequest")
	require.False(t, called)
}

func errWrap(err error) error { return errors.Join(errors.New("context"), err) }
