package commands

import (
	"cmp"
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// The stager's gRPC address in the dev stack, and the environment variable that
// overrides it.
const (
	DefaultStagerAddress = "127.0.0.1:17020"
	EnvStagerAddress     = "DROVER_STAGER_ADDRESS"
	// stagerName names the stager in errors.
	stagerName = "stager"
	// defaultBuildpackStack is the stack of the buildpack commands without --stack.
	defaultBuildpackStack = "bookworm"
)

// stagerAddress is the --stager flag, else $DROVER_STAGER_ADDRESS, else
// DefaultStagerAddress.
func (s *session) stagerAddress(flagValue string) string {
	return cmp.Or(flagValue, s.getenv(EnvStagerAddress), DefaultStagerAddress)
}

// stagerClient connects to the stager at addr with droverctl's certificate.
func (s *session) stagerClient(addr string) (stagerv1.StagerServiceClient, error) {
	conn, err := s.dialService(stagerName, addr)
	if err != nil {
		return nil, err
	}
	return stagerv1.NewStagerServiceClient(conn), nil
}

// callStager runs one unary call on the stager at addr bounded by --timeout; its
// errors name the stager and carry its status message.
func callStager[T any](ctx context.Context, s *session, addr string, call func(context.Context, stagerv1.StagerServiceClient) (T, error)) (T, error) {
	var zero T
	c, err := s.stagerClient(addr)
	if err != nil {
		return zero, err
	}
	callCtx, cancel := context.WithTimeout(ctx, s.opts.timeout)
	defer cancel()
	resp, err := call(callCtx, c)
	if err != nil {
		return zero, s.serviceError(stagerName, addr, err)
	}
	return resp, nil
}

// pushStager is push.Stager on the stager at addr. Stage is bounded only by the
// push's own limit; ListStacks by --timeout. A stager that cannot be reached is
// named in the status message, which push prints.
type pushStager struct {
	s    *session
	addr string
}

func (p pushStager) Stage(ctx context.Context, req *stagerv1.StageRequest) (grpc.ServerStreamingClient[stagerv1.StageResponse], error) {
	c, err := p.s.stagerClient(p.addr)
	if err != nil {
		return nil, err
	}
	stream, err := c.Stage(ctx, req)
	if err != nil {
		return nil, p.unreachable(err)
	}
	return namedStream{ServerStreamingClient: stream, p: p}, nil
}

func (p pushStager) ListStacks(ctx context.Context) ([]*stagerv1.Stack, error) {
	resp, err := callStager(ctx, p.s, p.addr, func(ctx context.Context, c stagerv1.StagerServiceClient) (*stagerv1.ListStacksResponse, error) {
		return c.ListStacks(ctx, &stagerv1.ListStacksRequest{})
	})
	return resp.GetStacks(), err
}

// unreachable names the stager in the message of an error that did not come from it
// (it could not be reached); the stager's own errors are kept as they are.
func (p pushStager) unreachable(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return err
	}
	return status.Errorf(st.Code(), "stager at %s: %s", p.addr, st.Message())
}

// namedStream is a Stage stream whose transport errors name the stager.
type namedStream struct {
	grpc.ServerStreamingClient[stagerv1.StageResponse]
	p pushStager
}

func (n namedStream) Recv() (*stagerv1.StageResponse, error) {
	resp, err := n.ServerStreamingClient.Recv()
	if err != nil {
		return nil, n.p.unreachable(err)
	}
	return resp, nil
}
