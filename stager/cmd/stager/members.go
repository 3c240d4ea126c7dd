package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"drover.dev/bbs/client"
	fileserver "drover.dev/fileserver/client"
	"drover.dev/lib/authz"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/debugserver"
	"drover.dev/lib/grpcserver"
	"drover.dev/lib/httpserver"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	repclient "drover.dev/rep/client"
	"drover.dev/stager/callback"
	"drover.dev/stager/config"
	"drover.dev/stager/metrics"
	"drover.dev/stager/server"
	"drover.dev/stager/store"
)

// stager is the process's shared wiring.
type stager struct {
	cfg      *config.Config
	logger   *slog.Logger
	level    *slog.LevelVar
	registry *prometheus.Registry
	bbs      *client.Client
	reps     *repclient.Pool
	store    *store.Store
	grpc     *grpc.Server
	health   *health.Server
	callback *http.Server
}

// newStager loads the certificates and the signing key, opens and migrates the
// database, connects to the BBS and builds the servers.
func newStager(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*stager, error) {
	serverTLS, clientTLS, err := cfg.TLS.ServerAndClient()
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	signingKey, err := libconfig.ReadSecretFile(cfg.FileserverSigningKeyFile)
	if err != nil {
		return nil, fmt.Errorf("fileserver_signing_key_file: %w", err)
	}
	names, err := cfg.Names()
	if err != nil {
		return nil, err
	}
	dsn, err := cfg.DatabaseConnString()
	if err != nil {
		return nil, err
	}
	registry := debugserver.NewRegistry()
	m, err := metrics.New(registry)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, dsn, int32(cfg.MaxDatabaseConnections), logger)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	bbs, err := client.New(cfg.BBSAddress, clientTLS)
	if err != nil {
		st.Close()
		return nil, err
	}
	reps := repclient.NewPool(clientTLS, repclient.Options{})
	guard, err := authz.ComponentGuard(names, server.Policy(), true, registry, logger)
	if err != nil {
		st.Close()
		_ = bbs.Close()
		return nil, err
	}
	waiters := callback.NewRegistry()
	srv, healthServer := grpcserver.NewServer(serverTLS, grpc.MaxRecvMsgSize(server.MaxRecvMsgBytes),
		grpc.UnaryInterceptor(guard.UnaryInterceptor()), grpc.StreamInterceptor(guard.StreamInterceptor()))
	stagerv1.RegisterStagerServiceServer(srv, server.New(server.Options{
		Config: cfg, BBS: bbs, Reps: reps, Files: fileserver.New(cfg.FileserverURL, []byte(signingKey), nil),
		Store: st, Registry: waiters, Metrics: m, Logger: logger,
	}))
	cb := &http.Server{Addr: cfg.CallbackListenAddress, Handler: callback.NewHandler(names, waiters, logger),
		TLSConfig: serverTLS.Clone(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
	return &stager{cfg: cfg, logger: logger, level: level, registry: registry, bbs: bbs, reps: reps, store: st,
		grpc: srv, health: healthServer, callback: cb}, nil
}

// Close releases the BBS connection, the rep pool and the database.
func (s *stager) Close() {
	_ = s.bbs.Close()
	_ = s.reps.Close()
	s.store.Close()
}

// StartedAttrs are logged once every member is ready.
func (s *stager) StartedAttrs() []any {
	return []any{"listen_address", s.cfg.ListenAddress, "callback_listen_address", s.cfg.CallbackListenAddress,
		"debug_address", s.cfg.DebugAddress, "bbs_address", s.cfg.BBSAddress}
}

// Members start in order: debug server, callback listener, gRPC server (SERVING once
// started); they stop in reverse.
func (s *stager) Members() ifrit.Runner {
	return grouper.NewOrdered(os.Interrupt, grouper.Members{
		{Name: "debug-server", Runner: debugserver.New(debugserver.Addresses{Metrics: s.cfg.DebugAddress, Admin: s.cfg.DebugAdminAddress}, s.registry, s.level, s.logger)},
		{Name: "callback-server", Runner: httpserver.New(s.callback, s.logger, httpserver.WithName("callback-server"))},
		{Name: "grpc-server", Runner: grpcserver.New(s.cfg.ListenAddress, s.grpc, s.health, s.logger)},
		{Name: "health", Runner: ifrit.RunFunc(func(signals <-chan os.Signal, ready chan<- struct{}) error {
			grpcserver.SetServing(s.health, s.grpc)
			close(ready)
			<-signals
			return nil
		})},
	})
}
