package debugserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"

	"drover.dev/lib/config"
	"drover.dev/lib/handover"
	"drover.dev/lib/httpserver"
	"drover.dev/lib/logging"
)

// Addresses say where a debug server listens: a process's debug_address and
// debug_admin_address (checked by config.DebugServer).
type Addresses struct {
	// Metrics is the host:port of /metrics and /healthz; it may be any address.
	Metrics string
	// Admin says where pprof and /log-level go (config.ParseDebugAdmin): "" on Metrics,
	// which must then be loopback; "off"; "unix:PATH"; or a loopback host:port.
	Admin string
}

// New returns an ifrit.Runner serving the debug endpoints over plain HTTP at addrs.
// Whatever the configuration says, it never serves pprof or /log-level on a TCP
// listener that is not bound to a loopback address: it fails to start instead. A nil
// reg serves a fresh NewRegistry; a nil level leaves /log-level out.
func New(addrs Addresses, reg *prometheus.Registry, level *slog.LevelVar, logger *slog.Logger) ifrit.Runner {
	if reg == nil {
		reg = NewRegistry()
	}
	return &runner{addrs: addrs, all: Handler(reg, level), metrics: MetricsHandler(reg), logger: logging.OrDiscard(logger)}
}

// runner opens the listeners, then serves them as one parallel group.
type runner struct {
	addrs        Addresses
	all, metrics http.Handler
	logger       *slog.Logger
}

// Run implements ifrit.Runner.
func (r *runner) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	members, err := r.listen()
	if err != nil {
		r.logger.Error("debug-server-failed-to-listen", "error", err.Error())
		return err
	}
	return grouper.NewParallel(os.Interrupt, members).Run(signals, ready)
}

// listen opens the metrics listener and, when the admin endpoints have their own, the
// admin listener, and pairs each with its handler.
func (r *runner) listen() (grouper.Members, error) {
	admin, err := config.ParseDebugAdmin(r.addrs.Admin)
	if err != nil {
		return nil, fmt.Errorf("debug server: debug_admin_address: %w", err)
	}
	lis, err := handover.Listen(r.addrs.Metrics)
	if err != nil {
		return nil, fmt.Errorf("debug server: %w", err)
	}
	switch admin.Network {
	case config.DebugAdminShared:
		if err := requireLoopback(r.addrs.Metrics, lis); err != nil {
			lis.Close()
			return nil, fmt.Errorf("debug server: debug_address %w: pprof and /log-level would be served there (set debug_admin_address)", err)
		}
		return grouper.Members{r.member("debug-server", lis, r.all)}, nil
	case config.DebugAdminOff:
		return grouper.Members{r.member("debug-server", lis, r.metrics)}, nil
	}
	adminLis, err := listenAdmin(admin)
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("debug server: debug_admin_address: %w", err)
	}
	return grouper.Members{r.member("debug-server", lis, r.metrics), r.member("debug-admin-server", adminLis, r.all)}, nil
}

// member serves h on lis.
func (r *runner) member(name string, lis net.Listener, h http.Handler) grouper.Member {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return grouper.Member{Name: name, Runner: httpserver.FromListener(lis, srv, r.logger, httpserver.WithName(name))}
}

// listenAdmin listens on a unix socket or a loopback TCP address.
func listenAdmin(admin config.DebugAdmin) (net.Listener, error) {
	if admin.Network == "unix" {
		return listenUnix(admin.Address)
	}
	lis, err := handover.Listen(admin.Address)
	if err != nil {
		return nil, err
	}
	if err := requireLoopback(admin.Address, lis); err != nil {
		lis.Close()
		return nil, err
	}
	return lis, nil
}

// errNotLoopback: a TCP listener is bound to an address other than loopback.
var errNotLoopback = errors.New("is not a loopback address")

// requireLoopback checks that the TCP listener opened for address is bound to a
// loopback address (not a routable one, nor the wildcard).
func requireLoopback(address string, lis net.Listener) error {
	addr, ok := lis.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		return fmt.Errorf("%s %w (bound to %s)", address, errNotLoopback, lis.Addr())
	}
	return nil
}
