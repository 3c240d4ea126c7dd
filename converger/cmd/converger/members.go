package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"

	"drover.dev/bbs/client"
	"drover.dev/bbs/client/lock"
	"drover.dev/converger/config"
	"drover.dev/converger/pass"
	"drover.dev/converger/plan"
	"drover.dev/lib/debugserver"
)

// converger is the process's shared wiring.
type converger struct {
	cfg      *config.Config
	logger   *slog.Logger
	level    *slog.LevelVar
	registry *prometheus.Registry
	owner    string
	bbs      *client.Client
	passes   *pass.Runner
}

// newConverger loads the client certificate, connects to the BBS and builds the pass
// runner. Without a tls block the BBS link is plaintext (tests only).
func newConverger(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*converger, error) {
	var clientTLS *tls.Config
	if cfg.TLS.Enabled() {
		var err error
		if clientTLS, err = cfg.TLS.Client(); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	owner := cfg.LockOwnerID("converger")
	registry := debugserver.NewRegistry()
	metrics, err := pass.NewMetrics(registry)
	if err != nil {
		return nil, err
	}
	bbs, err := client.New(cfg.BBSAddress, clientTLS)
	if err != nil {
		return nil, err
	}
	runner := pass.New(bbs, pass.Options{
		Owner: owner,
		Plan: plan.Options{
			StaleUnclaimed:  cfg.StaleUnclaimedDuration.Duration(),
			ExpirePending:   cfg.ExpirePendingTaskDuration.Duration(),
			KickTask:        cfg.KickTaskDuration.Duration(),
			ExpireCompleted: cfg.ExpireCompletedTaskDuration.Duration(),
		},
		Timeout: cfg.CommunicationTimeout.Duration(),
		Workers: cfg.ApplyWorkers,
		Logger:  logger,
		Metrics: metrics,
	})
	return &converger{cfg: cfg, logger: logger, level: level, registry: registry, owner: owner, bbs: bbs, passes: runner}, nil
}

// Close releases the BBS connection.
func (c *converger) Close() { _ = c.bbs.Close() }

// Members start in order: the debug server, the lock (ready once held) and the pass
// loop. Losing the lock stops the group (after the pass in progress) with an error.
func (c *converger) Members() ifrit.Runner {
	return grouper.NewOrdered(os.Interrupt, grouper.Members{
		{Name: "debug-server", Runner: debugserver.New(debugserver.Addresses{Metrics: c.cfg.DebugAddress, Admin: c.cfg.DebugAdminAddress}, c.registry, c.level, c.logger)},
		{Name: "lock", Runner: lock.New(lock.NewService(c.bbs), c.cfg.LockOptions(config.LockKey, c.owner, "", c.logger))},
		{Name: "converger-loop", Runner: pass.NewLoop(c.passes, c.cfg.RepeatInterval.Duration(), c.logger)},
	})
}
