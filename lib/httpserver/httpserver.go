// Package httpserver runs an *http.Server as an ifrit member: TLS when the server has a
// TLS configuration, ready once listening, graceful Shutdown on a signal.
package httpserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/tedsuo/ifrit"

	"drover.dev/lib/handover"
	"drover.dev/lib/internal/serve"
	"drover.dev/lib/logging"
)

// DefaultGracePeriod bounds Shutdown; long-lived responses (event streams) are cut after it.
const DefaultGracePeriod = 5 * time.Second

// Option tunes a runner.
type Option func(*serve.Runner)

// WithGracePeriod sets how long Shutdown may take before Close.
func WithGracePeriod(d time.Duration) Option {
	return func(r *serve.Runner) { r.Grace = d }
}

// WithName sets the prefix of the runner's log messages (default "http-server").
func WithName(name string) Option {
	return func(r *serve.Runner) { r.Name = name }
}

// New returns an ifrit.Runner that listens on srv.Addr (or the socket handed over for it:
// lib/handover) and serves srv: with TLS (ServeTLS, certificates and client-certificate
// policy from srv.TLSConfig) when srv.TLSConfig is set, plain HTTP otherwise. A nil srv.ErrorLog is set to ErrorLog.
func New(srv *http.Server, logger *slog.Logger, opts ...Option) ifrit.Runner {
	if srv == nil {
		return failing
	}
	listen := func() (net.Listener, error) { return handover.Listen(srv.Addr) }
	return newRunner(listen, srv, logger, opts)
}

// FromListener is New for a listener that already exists; srv.Addr is ignored.
func FromListener(lis net.Listener, srv *http.Server, logger *slog.Logger, opts ...Option) ifrit.Runner {
	if srv == nil {
		return failing
	}
	listen := func() (net.Listener, error) {
		if lis == nil {
			return nil, errors.New("nil listener")
		}
		return lis, nil
	}
	return newRunner(listen, srv, logger, opts)
}

var failing = ifrit.RunFunc(func(<-chan os.Signal, chan<- struct{}) error {
	return errors.New("http server: nil *http.Server")
})

func newRunner(listen func() (net.Listener, error), srv *http.Server, logger *slog.Logger, opts []Option) ifrit.Runner {
	r := &serve.Runner{
		Name:   "http-server",
		Listen: listen,
		Serve: func(lis net.Listener) error {
			if srv.TLSConfig != nil {
				return srv.ServeTLS(lis, "", "")
			}
			return srv.Serve(lis)
		},
		IsStopped: func(err error) bool { return errors.Is(err, http.ErrServerClosed) },
		Graceful:  func() { _ = srv.Shutdown(context.Background()) },
		Hard:      func() { _ = srv.Close() },
		Grace:     DefaultGracePeriod,
		Logger:    logging.OrDiscard(logger),
	}
	for _, opt := range opts {
		opt(r)
	}
	if srv.ErrorLog == nil {
		srv.ErrorLog = ErrorLog(r.Logger, r.Name)
	}
	return r
}
