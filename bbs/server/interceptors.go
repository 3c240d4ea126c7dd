package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// UnaryInterceptor validates the request of every drover.bbs.v1 call with
// models.ValidateRequest (InvalidArgument, handler not called), recovers panics into
// Internal, logs each call and makes sure every returned error is a gRPC status.
func UnaryInterceptor(logger *slog.Logger) grpc.UnaryServerInterceptor {
	logger = orDiscard(logger)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				resp, err = nil, panicStatus(logger, info.FullMethod, p)
			}
			logCall(logger, info.FullMethod, start, err)
		}()
		if err := checkRequest(info.FullMethod, req); err != nil {
			return nil, err
		}
		resp, err = handler(ctx, req)
		return resp, toStatus(logger, info.FullMethod, err)
	}
}

// StreamInterceptor does for streaming calls what UnaryInterceptor does for unary
// ones; requests are validated as they are received.
func StreamInterceptor(logger *slog.Logger) grpc.StreamServerInterceptor {
	logger = orDiscard(logger)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				err = panicStatus(logger, info.FullMethod, p)
			}
			logCall(logger, info.FullMethod, start, err)
		}()
		err = handler(srv, &validatingStream{ServerStream: ss, method: info.FullMethod})
		return toStatus(logger, info.FullMethod, err)
	}
}

// validatingStream validates each message it receives for method.
type validatingStream struct {
	grpc.ServerStream
	method string
}

// RecvMsg receives and validates one request.
func (s *validatingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return checkRequest(s.method, m)
}

// bbsMethods is the prefix of the full method names of the drover.bbs.v1 services.
var bbsMethods = "/" + string(bbsv1.File_drover_bbs_v1_task_service_proto.Package()) + "."

// checkRequest applies request defaults, then validates a request of a drover.bbs.v1
// method; the error is a gRPC status. The requests of the other services on the same
// servers (health, reflection) are their libraries' to check.
func checkRequest(method string, req any) error {
	if !strings.HasPrefix(method, bbsMethods) {
		return nil
	}
	if r, ok := req.(*bbsv1.DesireLRPRequest); ok {
		models.PrepareDesiredLRP(r.GetDesiredLrp())
	}
	if err := models.ValidateRequest(req); err != nil {
		var e *models.Error
		if errors.As(err, &e) {
			return e.GRPCStatus().Err()
		}
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return nil
}

// toStatus turns any handler error into a gRPC status error: typed BBS errors convert
// themselves, context errors become Canceled or DeadlineExceeded, statuses pass, and
// anything else becomes Unknown with a safe message (the real error is logged).
func toStatus(logger *slog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	var e *models.Error
	if errors.As(err, &e) {
		return e.GRPCStatus().Err()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	logger.Error("unexpected-error", "method", method, "error", err)
	return status.Error(codes.Unknown, "internal error")
}

// panicStatus logs a recovered panic and returns the Internal status the client sees.
func panicStatus(logger *slog.Logger, method string, p any) error {
	logger.Error("handler-panicked", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return status.Error(codes.Internal, "internal error")
}

// logCall logs a finished call: debug on success, info for refusals caused by the
// request, error for failures of the server.
func logCall(logger *slog.Logger, method string, start time.Time, err error) {
	attrs := []any{"method", method, "duration", time.Since(start).String()}
	if err == nil {
		logger.Debug("grpc-call", attrs...)
		return
	}
	st := status.Convert(err)
	attrs = append(attrs, "code", st.Code().String(), "error", st.Message())
	switch st.Code() {
	case codes.Canceled:
		logger.Debug("grpc-call-cancelled", attrs...)
	case codes.Unknown, codes.Internal, codes.DataLoss, codes.Unimplemented:
		logger.Error("grpc-call-failed", attrs...)
	default:
		logger.Info("grpc-call-refused", attrs...)
	}
}

func orDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}
