// Package serve is the ifrit runner shared by drover's network servers: listen, become
// ready, serve, and on a signal stop gracefully within a grace period, then hard.
package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"
)

// Runner runs one server. Every function field is required except BeforeStop.
type Runner struct {
	// Name prefixes log messages, e.g. "grpc-server".
	Name string
	// Listen opens the listener; Run becomes ready once it returns.
	Listen func() (net.Listener, error)
	// Serve serves on the listener until the server is stopped.
	Serve func(net.Listener) error
	// IsStopped reports whether an error from Serve only says the server was stopped.
	IsStopped func(error) bool
	// BeforeStop runs first on a signal (e.g. reporting NOT_SERVING); optional.
	BeforeStop func()
	// Graceful stops accepting work and blocks until in-flight work is done.
	Graceful func()
	// Hard stops at once; it makes a running Graceful return.
	Hard func()
	// Grace bounds Graceful.
	Grace time.Duration
	// Logger receives the runner's lifecycle lines.
	Logger *slog.Logger
}

// Run implements ifrit.Runner.
func (r *Runner) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	lis, err := r.Listen()
	if err != nil {
		r.Logger.Error(r.Name+"-failed-to-listen", "error", err)
		return fmt.Errorf("%s listen: %w", r.Name, err)
	}
	address := lis.Addr().String()
	logger := r.Logger.With("address", address)
	served := make(chan error, 1)
	go func() { served <- r.Serve(lis) }()
	logger.Info(r.Name + "-listening")
	close(ready)

	select {
	case err := <-served:
		if err == nil || r.IsStopped(err) {
			err = errors.New("stopped unexpectedly")
		}
		logger.Error(r.Name+"-failed", "error", err)
		return fmt.Errorf("%s %s: %w", r.Name, address, err)
	case sig := <-signals:
		logger.Info(r.Name+"-stopping", "signal", sig.String())
		if r.BeforeStop != nil {
			r.BeforeStop()
		}
		r.stop(logger)
		if err := <-served; err != nil && !r.IsStopped(err) {
			logger.Error(r.Name+"-failed-while-stopping", "error", err)
			return fmt.Errorf("%s %s: %w", r.Name, address, err)
		}
		logger.Info(r.Name + "-stopped")
		return nil
	}
}

func (r *Runner) stop(logger *slog.Logger) {
	done := make(chan struct{})
	go func() {
		r.Graceful()
		close(done)
	}()
	timer := time.NewTimer(r.Grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		logger.Info(r.Name+"-grace-period-over", "grace_period", r.Grace.String())
		r.Hard()
		<-done
	}
}
