package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"drover.dev/bbs/client"
	"drover.dev/bbs/client/lock"
	"drover.dev/lib/authz"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/debugserver"
	"drover.dev/lib/grpcserver"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
	"drover.dev/route-emitter/config"
	"drover.dev/route-emitter/emitter"
	"drover.dev/route-emitter/metrics"
	"drover.dev/route-emitter/server"
	"drover.dev/route-emitter/watcher"
	"github.com/prometheus/client_golang/prometheus"
)

// routeEmitter is the process's shared wiring.
type routeEmitter struct {
	cfg      *config.Config
	logger   *slog.Logger
	level    *slog.LevelVar
	registry *prometheus.Registry
	owner    string
	bbs      *client.Client
	emitter  *emitter.Emitter
	watcher  *watcher.Watcher
	grpc     *grpc.Server
	health   *health.Server
}

// newRouteEmitter loads the certificates, connects to the BBS and builds the members.
// Without a tls block the BBS and gRPC links are plaintext (tests only).
func newRouteEmitter(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*routeEmitter, error) {
	var serverTLS, clientTLS, natsTLS *tls.Config
	var err error
	if cfg.TLS.Enabled() {
		if serverTLS, clientTLS, err = cfg.TLS.ServerAndClient(); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	if cfg.NATSTLS.Enabled() {
		if natsTLS, err = cfg.NATSTLS.Client(); err != nil {
			return nil, fmt.Errorf("nats_tls: %w", err)
		}
	}
	natsPassword, err := libconfig.Password(cfg.NATSPassword, cfg.NATSPasswordFile)
	if err != nil {
		return nil, fmt.Errorf("nats_password_file: %w", err)
	}
	registry := debugserver.NewRegistry()
	m, err := metrics.New(registry)
	if err != nil {
		return nil, err
	}
	bbs, err := client.New(cfg.BBSAddress, clientTLS)
	if err != nil {
		return nil, err
	}
	em := emitter.New(emitter.Options{
		Addresses: cfg.NATSAddresses, Username: cfg.NATSUsername, Password: natsPassword, TLS: natsTLS,
		RegisterInterval: cfg.RegisterInterval.Duration(), GreetInterval: cfg.GreetInterval.Duration(),
		JitterFactor: cfg.JitterFactor, MaxMessagesPerSecond: cfg.MaxMessagesPerSecond,
		UnregistrationInterval: cfg.UnregistrationInterval.Duration(), UnregistrationSendCount: cfg.UnregistrationSendCount,
		Logger: logger, Metrics: m,
	})
	w := watcher.New(bbs, em, watcher.Options{
		CellID: cfg.CellID, SyncInterval: cfg.SyncInterval.Duration(), Timeout: cfg.CommunicationTimeout.Duration(),
		StateFile: cfg.StateFile, Logger: logger, Metrics: m,
	})
	names, err := cfg.Names()
	if err != nil {
		return nil, err
	}
	guard, err := authz.ComponentGuard(names, server.Policy(), cfg.TLS.Enabled(), registry, logger)
	if err != nil {
		return nil, err
	}
	srv, healthServer := grpcserver.NewServer(serverTLS,
		grpc.UnaryInterceptor(guard.UnaryInterceptor()), grpc.StreamInterceptor(guard.StreamInterceptor()))
	routeemitterv1.RegisterRouteEmitterServiceServer(srv, server.New(w, em, cfg.CellID))
	return &routeEmitter{cfg: cfg, logger: logger, level: level, registry: registry, bbs: bbs,
		owner: cfg.LockOwnerID("route-emitter"), emitter: em, watcher: w, grpc: srv, health: healthServer}, nil
}

// Close releases the BBS connection.
func (r *routeEmitter) Close() { _ = r.bbs.Close() }

// StartedAttrs are logged once every member is ready.
func (r *routeEmitter) StartedAttrs() []any {
	mode := "global"
	if r.cfg.LocalMode() {
		mode = "local"
	}
	return []any{"mode", mode, "cell_id", r.cfg.CellID, "owner", r.owner, "listen_address", r.cfg.ListenAddress,
		"debug_address", r.cfg.DebugAddress, "bbs_address", r.cfg.BBSAddress}
}

// Members start in order: debug server, NATS emitter, gRPC server, the lock (global
// mode: standbys wait here with NATS connected), the watcher, and the health marker
// that turns SERVING once the first sync is done.
func (r *routeEmitter) Members() ifrit.Runner {
	members := grouper.Members{
		{Name: "debug-server", Runner: debugserver.New(debugserver.Addresses{Metrics: r.cfg.DebugAddress, Admin: r.cfg.DebugAdminAddress}, r.registry, r.level, r.logger)},
		{Name: "nats-emitter", Runner: ifrit.RunFunc(r.emitter.Run)},
		{Name: "grpc-server", Runner: grpcserver.New(r.cfg.ListenAddress, r.grpc, r.health, r.logger)},
	}
	if !r.cfg.LocalMode() {
		members = append(members, grouper.Member{Name: "lock",
			Runner: lock.New(lock.NewService(r.bbs), r.cfg.LockOptions(config.LockKey, r.owner, r.cfg.ListenAddress, r.logger))})
	}
	members = append(members,
		grouper.Member{Name: "watcher", Runner: ifrit.RunFunc(r.watcher.Run)},
		grouper.Member{Name: "health", Runner: ifrit.RunFunc(r.markServing)},
	)
	return grouper.NewOrdered(os.Interrupt, members)
}

// markServing is ready at once and sets the health SERVING after the first sync.
func (r *routeEmitter) markServing(signals <-chan os.Signal, ready chan<- struct{}) error {
	close(ready)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-signals:
			return nil
		case <-tick.C:
			if r.watcher.Status().Synced {
				grpcserver.SetServing(r.health, r.grpc)
				r.logger.Info("route-emitter-serving")
				<-signals
				return nil
			}
		}
	}
}
