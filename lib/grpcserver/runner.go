package grpcserver

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/tedsuo/ifrit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"drover.dev/lib/handover"
	"drover.dev/lib/internal/serve"
	"drover.dev/lib/logging"
)

// DefaultGracePeriod is how long a signalled server waits for in-flight RPCs (including
// open streams) before it stops hard.
const DefaultGracePeriod = 5 * time.Second

// Option tunes a runner.
type Option func(*serve.Runner)

// WithGracePeriod sets how long GracefulStop may take before Stop.
func WithGracePeriod(d time.Duration) Option {
	return func(r *serve.Runner) { r.Grace = d }
}

// New returns an ifrit.Runner that listens on addr (TCP, or the socket handed over for
// addr: lib/handover), becomes ready once listening, and serves srv. On a signal it sets
// healthServer NOT_SERVING for every service, stops gracefully and, after the grace
// period, hard. healthServer may be nil.
func New(addr string, srv *grpc.Server, healthServer *health.Server, logger *slog.Logger, opts ...Option) ifrit.Runner {
	listen := func() (net.Listener, error) { return handover.Listen(addr) }
	return newRunner(listen, srv, healthServer, logger, opts)
}

// FromListener is New for a listener that already exists (a bufconn listener, or a TCP
// listener bound to port 0 in tests). The runner closes it when it stops.
func FromListener(lis net.Listener, srv *grpc.Server, healthServer *health.Server, logger *slog.Logger, opts ...Option) ifrit.Runner {
	listen := func() (net.Listener, error) {
		if lis == nil {
			return nil, errors.New("nil listener")
		}
		return lis, nil
	}
	return newRunner(listen, srv, healthServer, logger, opts)
}

func newRunner(listen func() (net.Listener, error), srv *grpc.Server, healthServer *health.Server, logger *slog.Logger, opts []Option) ifrit.Runner {
	if srv == nil {
		return ifrit.RunFunc(func(<-chan os.Signal, chan<- struct{}) error {
			return errors.New("grpc server: nil *grpc.Server")
		})
	}
	r := &serve.Runner{
		Name:      "grpc-server",
		Listen:    listen,
		Serve:     srv.Serve,
		IsStopped: func(err error) bool { return errors.Is(err, grpc.ErrServerStopped) },
		Graceful:  srv.GracefulStop,
		Hard:      srv.Stop,
		Grace:     DefaultGracePeriod,
		Logger:    logging.OrDiscard(logger),
	}
	if healthServer != nil {
		r.BeforeStop = healthServer.Shutdown
	}
	for _, opt := range opts {
		opt(r)
	}
	return r
}
