package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"
	"google.golang.org/grpc"

	"drover.dev/bbs/client"
	"drover.dev/executor"
	"drover.dev/lib/authz"
	"drover.dev/lib/debugserver"
	"drover.dev/lib/grpcserver"
	"drover.dev/rep/cellmetrics"
	"drover.dev/rep/config"
	"drover.dev/rep/crashlogs"
	"drover.dev/rep/evacuation"
	"drover.dev/rep/handlers"
	"drover.dev/rep/harmonizer"
	"drover.dev/rep/presence"
)

// rep is the process's shared wiring, built before any member starts.
type rep struct {
	cfg       *config.Config
	logger    *slog.Logger
	level     *slog.LevelVar
	registry  *prometheus.Registry
	metrics   *grpcserver.Metrics
	serverTLS *tls.Config
	// guard authorises the callers of the rep's gRPC server (handlers.Policy).
	guard *authz.Guard
	bbs   *client.Client
	exec  executor.Client
	// execRunner runs the executor's loops (adoption, reaping, expiry) as the first member.
	execRunner ifrit.Runner
	presence   *presence.Runner
	harmony    *harmonizer.Harmonizer
	// evacuation is the cell's drain state; evacuator ends the process once it is done.
	evacuation *evacuation.State
	evacuator  *evacuation.Evacuator
	// crashLogs keeps the last lines of crashed instances for logs --previous.
	crashLogs *crashlogs.Store
}

// newRep loads the certificates, connects the BBS client and builds every member.
func newRep(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*rep, error) {
	var serverTLS, clientTLS *tls.Config
	if cfg.TLS.Enabled() {
		var err error
		if serverTLS, clientTLS, err = cfg.TLS.ServerAndClient(); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	} else {
		logger.Warn("tls-disabled", "detail", "serving and dialling the BBS in plaintext")
	}
	registry := debugserver.NewRegistry()
	metrics, err := grpcserver.NewMetrics(registry)
	if err != nil {
		return nil, err
	}
	names, err := cfg.Names()
	if err != nil {
		return nil, err
	}
	guard, err := authz.ComponentGuard(names, handlers.Policy(), cfg.TLS.Enabled(), registry, logger)
	if err != nil {
		return nil, err
	}
	bbs, err := client.New(cfg.BBSAddress, clientTLS)
	if err != nil {
		return nil, err
	}
	r := &rep{cfg: cfg, logger: logger, level: level, registry: registry, metrics: metrics, serverTLS: serverTLS, guard: guard, bbs: bbs}
	if r.exec, r.execRunner, err = newExecutor(cfg, registry, logger); err != nil {
		bbs.Close()
		return nil, fmt.Errorf("executor: %w", err)
	}
	if err := registry.Register(cellmetrics.New(r.exec)); err != nil {
		bbs.Close()
		return nil, err
	}
	if r.presence, err = presence.New(presence.Config{
		CellID:                cfg.CellID,
		RepAddress:            cfg.Advertised(),
		Zone:                  cfg.Zone,
		PlacementTags:         cfg.PlacementTags,
		OptionalPlacementTags: cfg.OptionalPlacementTags,
		TTL:                   cfg.PresenceTTL.Duration(),
		Interval:              cfg.PresenceInterval.Duration(),
	}, r.exec, bbs, registry, logger); err != nil {
		bbs.Close()
		return nil, err
	}
	harmonyMetrics, err := harmonizer.NewMetrics(registry)
	if err != nil {
		bbs.Close()
		return nil, err
	}
	evacuationMetrics, err := evacuation.NewMetrics(registry)
	if err != nil {
		bbs.Close()
		return nil, err
	}
	r.evacuation = evacuation.NewState(evacuationMetrics)
	harmonyBBS := harmonizer.GRPCBBS{Client: bbs}
	r.crashLogs = crashlogs.New(crashlogs.Options{})
	r.harmony = harmonizer.New(harmonizer.Config{
		CellID:                    cfg.CellID,
		Zone:                      cfg.Zone,
		PollingInterval:           cfg.PollingInterval.Duration(),
		Evacuation:                r.evacuation,
		EvacuationPollingInterval: cfg.EvacuationPollingInterval.Duration(),
		CrashLogs:                 r.crashLogs,
	}, r.exec, harmonyBBS, harmonyMetrics, logger)
	r.evacuator = evacuation.NewEvacuator(evacuation.Config{
		CellID:          cfg.CellID,
		PollingInterval: cfg.EvacuationPollingInterval.Duration(),
		Timeout:         cfg.EvacuationTimeout.Duration(),
	}, r.evacuation, evacuation.Deps{
		Containers: r.exec,
		LRPs:       harmonyBBS,
		Retirer:    r.harmony,
		Presence:   r.presence,
	}, evacuationMetrics, logger)
	return r, nil
}

// Close releases the BBS connection.
func (r *rep) Close() { _ = r.bbs.Close() }

// Members starts the rep in dependency order and stops it in reverse: the harmonizer
// and the server stop before the executor; a plain stop deletes no container. The
// evacuator returns once an evacuation (Evacuate RPC, or SIGTERM/SIGINT with
// evacuate_on_sigterm) has finished, which stops the group with exit code 0.
func (r *rep) Members() ifrit.Runner {
	group := grouper.NewOrdered(os.Interrupt, grouper.Members{
		{Name: "executor", Runner: r.execRunner},
		{Name: "presence", Runner: r.presence},
		{Name: "grpc-server", Runner: ifrit.RunFunc(r.runGRPCServer)},
		{Name: "harmonizer", Runner: r.harmony},
		{Name: "evacuator", Runner: r.evacuator},
		{Name: "debug-server", Runner: debugserver.New(debugserver.Addresses{Metrics: r.cfg.DebugAddress, Admin: r.cfg.DebugAdminAddress}, r.registry, r.level, r.logger)},
	})
	if !r.cfg.EvacuateOnSigterm {
		return group
	}
	return evacuation.OnSignal(group, r.evacuation, r.logger)
}

// runGRPCServer serves drover.rep.v1 (with health and reflection) and, once stopped,
// waits for task cancellations still in flight.
func (r *rep) runGRPCServer(signals <-chan os.Signal, ready chan<- struct{}) error {
	api := handlers.New(handlers.Cell{
		ID:                    r.cfg.CellID,
		Zone:                  r.cfg.Zone,
		PlacementTags:         r.cfg.PlacementTags,
		OptionalPlacementTags: r.cfg.OptionalPlacementTags,
	}, r.exec, r.evacuation, r.logger)
	api.SetPreviousLogs(r.crashLogs)
	api.WithExec(handlers.GRPCExecBBS{Client: r.bbs})
	srv, healthServer := grpcserver.NewServer(r.serverTLS,
		grpc.ChainUnaryInterceptor(r.metrics.UnaryInterceptor(), r.guard.UnaryInterceptor()),
		grpc.ChainStreamInterceptor(r.metrics.StreamInterceptor(), r.guard.StreamInterceptor()),
	)
	api.Register(srv)
	r.metrics.Initialize(srv)
	grpcserver.SetServing(healthServer, srv)
	err := grpcserver.New(r.cfg.ListenAddress, srv, healthServer, r.logger).Run(signals, ready)
	api.Wait()
	return err
}
