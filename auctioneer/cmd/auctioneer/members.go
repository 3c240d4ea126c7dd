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
	"google.golang.org/grpc/health"

	"drover.dev/auctioneer/auction"
	"drover.dev/auctioneer/config"
	"drover.dev/auctioneer/runner"
	"drover.dev/auctioneer/server"
	"drover.dev/bbs/client"
	"drover.dev/bbs/client/lock"
	"drover.dev/lib/authz"
	"drover.dev/lib/debugserver"
	"drover.dev/lib/grpcserver"
	repclient "drover.dev/rep/client"
)

// auctioneer is the process's shared wiring.
type auctioneer struct {
	cfg      *config.Config
	logger   *slog.Logger
	level    *slog.LevelVar
	registry *prometheus.Registry
	owner    string

	bbs    *client.Client
	reps   *repclient.Pool
	batch  *runner.Batch
	runner *runner.Runner
	api    *server.Server
	grpc   *grpc.Server
	health *health.Server
}

// newAuctioneer loads the certificates, connects the clients and builds the members'
// parts. Without a tls block every link is plaintext (tests only).
func newAuctioneer(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*auctioneer, error) {
	var serverTLS, clientTLS *tls.Config
	if cfg.TLS.Enabled() {
		var err error
		if serverTLS, clientTLS, err = cfg.TLS.ServerAndClient(); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	owner := cfg.LockOwnerID("auctioneer")
	registry := debugserver.NewRegistry()
	grpcMetrics, err := grpcserver.NewMetrics(registry)
	if err != nil {
		return nil, err
	}
	metrics, err := runner.NewMetrics(registry)
	if err != nil {
		return nil, err
	}
	bbs, err := client.New(cfg.BBSAddress, clientTLS)
	if err != nil {
		return nil, err
	}
	a := &auctioneer{
		cfg: cfg, logger: logger, level: level, registry: registry, owner: owner,
		bbs:   bbs,
		reps:  repclient.NewPool(clientTLS, repclient.Options{}),
		batch: runner.NewBatch(),
	}
	a.runner = runner.New(a.batch, runner.NewBBS(bbs), runner.NewRepFactory(a.reps), runner.Options{
		CellStateTimeout:     cfg.CellStateTimeout.Duration(),
		CommunicationTimeout: cfg.CommunicationTimeout.Duration(),
		Workers:              cfg.AuctionRunnerWorkers,
		Auction: auction.Options{
			StartingContainerWeight:       cfg.StartingContainerWeight,
			BinPackFirstFitWeight:         cfg.BinPackFirstFitWeight,
			StartingContainerCountMaximum: cfg.StartingContainerCountMaximum,
		},
		Logger:  logger,
		Metrics: metrics,
	})
	names, err := cfg.Names()
	if err != nil {
		return nil, err
	}
	guard, err := authz.ComponentGuard(names, server.Policy(), cfg.TLS.Enabled(), registry, logger)
	if err != nil {
		return nil, err
	}
	a.api = server.New(a.batch, logger)
	a.grpc, a.health = grpcserver.NewServer(serverTLS,
		grpc.ChainUnaryInterceptor(grpcMetrics.UnaryInterceptor(), guard.UnaryInterceptor()),
		grpc.ChainStreamInterceptor(grpcMetrics.StreamInterceptor(), guard.StreamInterceptor()),
	)
	a.api.Register(a.grpc)
	grpcMetrics.Initialize(a.grpc)
	return a, nil
}

// Close releases the outbound connections.
func (a *auctioneer) Close() {
	_ = a.reps.Close()
	_ = a.bbs.Close()
}

// Members start in order: the debug server, the gRPC server (NOT_SERVING, refusing
// auctions), the lock (ready once held), the runner, and finally activation, which
// lets requests through and reports SERVING. Losing the lock stops the whole group.
func (a *auctioneer) Members() ifrit.Runner {
	return grouper.NewOrdered(os.Interrupt, grouper.Members{
		{Name: "debug-server", Runner: debugserver.New(debugserver.Addresses{Metrics: a.cfg.DebugAddress, Admin: a.cfg.DebugAdminAddress}, a.registry, a.level, a.logger)},
		{Name: "grpc-server", Runner: grpcserver.New(a.cfg.ListenAddress, a.grpc, a.health, a.logger)},
		{Name: "lock", Runner: lock.New(lock.NewService(a.bbs), a.cfg.LockOptions(config.LockKey, a.owner, a.cfg.ListenAddress, a.logger))},
		{Name: "auction-runner", Runner: a.runner},
		{Name: "activation", Runner: ifrit.RunFunc(a.activate)},
	})
}

// activate opens the API and reports SERVING until signalled, then closes it again.
func (a *auctioneer) activate(signals <-chan os.Signal, ready chan<- struct{}) error {
	a.api.Activate()
	grpcserver.SetServing(a.health, a.grpc)
	a.logger.Info("auctioneer-active")
	close(ready)
	<-signals
	a.api.Deactivate()
	a.health.Shutdown()
	return nil
}
