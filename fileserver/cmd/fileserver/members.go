package main

import (
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"

	"drover.dev/fileserver/blobstore"
	"drover.dev/fileserver/config"
	"drover.dev/fileserver/server"
	"drover.dev/lib/debugserver"
	"drover.dev/lib/httpserver"
)

// idleTimeout closes keep-alive connections left idle.
const idleTimeout = 2 * time.Minute

// fileserver is the process's wiring.
type fileserver struct {
	cfg      *config.Config
	logger   *slog.Logger
	level    *slog.LevelVar
	registry *prometheus.Registry
	server   *server.Server
}

// newFileserver reads the signing key, opens the blob directory and builds the handler.
func newFileserver(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*fileserver, error) {
	key, err := cfg.SigningKey()
	if err != nil {
		return nil, err
	}
	store, err := blobstore.Open(cfg.BlobDirectory)
	if err != nil {
		return nil, err
	}
	registry := debugserver.NewRegistry()
	metrics, err := server.NewMetrics(registry)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Options{
		StaticDir: cfg.StaticDirectory, Store: store, SigningKey: key, Metrics: metrics, Logger: logger,
		Limits:              blobstore.PackageLimits{MaxBytes: cfg.MaxPackageBytes, MaxFiles: cfg.MaxPackageFiles},
		MaxBlobBytes:        cfg.MaxBlobBytes,
		MaxPackageListBytes: cfg.MaxPackageListBytes,
		Match: server.MatchLimits{MaxBytes: cfg.MaxMatchBytes, MaxResources: cfg.MaxMatchResources,
			MaxConcurrent: cfg.MaxConcurrentMatches},
	})
	if err != nil {
		return nil, err
	}
	return &fileserver{cfg: cfg, logger: logger, level: level, registry: registry, server: srv}, nil
}

// Close releases the static directory.
func (f *fileserver) Close() { _ = f.server.Close() }

// StartedAttrs are logged once both servers listen.
func (f *fileserver) StartedAttrs() []any {
	return []any{"server_address", f.cfg.ServerAddress, "debug_address", f.cfg.DebugAddress, "debug_admin_address", f.cfg.DebugAdminAddress,
		"static_directory", f.cfg.StaticDirectory, "blob_directory", f.cfg.BlobDirectory}
}

// Members start in order: the debug server, then the HTTP server.
func (f *fileserver) Members() ifrit.Runner {
	httpSrv := &http.Server{Addr: f.cfg.ServerAddress, Handler: f.server, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: idleTimeout}
	return grouper.NewOrdered(os.Interrupt, grouper.Members{
		{Name: "debug-server", Runner: debugserver.New(debugserver.Addresses{Metrics: f.cfg.DebugAddress, Admin: f.cfg.DebugAdminAddress}, f.registry, f.level, f.logger)},
		{Name: "http-server", Runner: httpserver.New(httpSrv, f.logger)},
	})
}
