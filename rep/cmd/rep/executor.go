package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tedsuo/ifrit"

	"drover.dev/executor"
	"drover.dev/executor/containerd"
	"drover.dev/executor/download"
	"drover.dev/executor/engine"
	"drover.dev/executor/network"
	"drover.dev/executor/sim"
	"drover.dev/rep/config"
)

// downloadTimeout bounds one download of a cached dependency or download action.
const downloadTimeout = 10 * time.Minute

// newExecutor builds the in-process executor on the configured backend: the client the
// rep drives and the runner of its loops. It is the one place that knows the
// executor's constructors.
func newExecutor(cfg *config.Config, reg prometheus.Registerer, logger *slog.Logger) (executor.Client, ifrit.Runner, error) {
	ec := cfg.Executor
	var runtime executor.Runtime
	switch ec.Backend {
	case "sim":
		runtime = sim.New(sim.Config{
			StartLatency:      ec.SimStartLatency.Duration(),
			FailureRate:       ec.SimFailureRate,
			Seed:              time.Now().UnixNano(),
			PreloadedRootFSes: slices.Sorted(maps.Keys(cfg.PreloadedRootFSes)),
			ArbitrarySchemes:  cfg.RootFSProviders,
			ExternalIP:        ec.ExternalIP,
		})
	case "containerd":
		observeFirewall, err := newEgressSetupMetric(reg)
		if err != nil {
			return nil, nil, err
		}
		rt, err := containerd.New(context.Background(), containerd.Config{
			Socket:            ec.ContainerdSocket,
			Namespace:         ec.ContainerdNamespace,
			StateDir:          filepath.Join(ec.StateDir, "containerd"),
			PreloadedRootFSes: cfg.PreloadedRootFSes,
			ArbitrarySchemes:  cfg.RootFSProviders,
			Network: network.Config{
				StateDir:       filepath.Join(ec.StateDir, "network"),
				CNIBinDir:      ec.CNIBinDir,
				BridgeName:     ec.BridgeName,
				Subnet:         ec.Subnet,
				ExternalIP:     ec.ExternalIP,
				PortRangeStart: ec.PortRangeStart,
				PortRangeEnd:   ec.PortRangeEnd,
			},
			GracePeriod:      ec.GracePeriod.Duration(),
			DiskPollInterval: ec.DiskPollInterval.Duration(),
			Registry: containerd.RegistryConfig{
				Default:     ec.DefaultRegistry,
				Insecure:    ec.InsecureRegistries,
				CAFile:      ec.RegistryCAFile,
				GCGrace:     ec.ImageGCGrace.Duration(),
				PullTimeout: ec.ImagePullTimeout.Duration(),
			},
			DefaultEgressRules:   ec.DefaultEgressRules,
			UserNamespace:        ec.UserNamespace,
			ObserveFirewallSetup: observeFirewall,
		}, logger)
		if err != nil {
			return nil, nil, fmt.Errorf("containerd runtime: %w", err)
		}
		runtime = rt
	default:
		return nil, nil, fmt.Errorf("unknown executor backend %q", ec.Backend)
	}
	cache, err := download.NewCache(filepath.Join(ec.StateDir, "downloads"), ec.MaxCacheBytes, &http.Client{Timeout: downloadTimeout})
	if err != nil {
		return nil, nil, fmt.Errorf("download cache: %w", err)
	}
	eng := engine.New(engine.Config{
		CellID:               cfg.CellID,
		Capacity:             executor.Resources{MemoryMB: cfg.MemoryMB, DiskMB: cfg.DiskMB, Containers: cfg.Containers},
		StateDir:             filepath.Join(ec.StateDir, "engine"),
		GracePeriod:          ec.GracePeriod.Duration(),
		UnhealthyInterval:    ec.UnhealthyInterval.Duration(),
		HealthyInterval:      ec.HealthyInterval.Duration(),
		ReservedExpiration:   ec.ReservedExpiration.Duration(),
		ReapInterval:         ec.ReapInterval.Duration(),
		MetricsInterval:      ec.MetricsInterval.Duration(),
		LogLinesPerContainer: ec.LogLinesPerInstance,
	}, runtime, engine.CacheDownloader(cache), logger)
	// *engine.Executor cannot be both an executor.Client (Run(ctx, RunRequest)) and an
	// ifrit.Runner (Run(signals, ready)); the engine exposes its loops separately.
	return eng, eng.Runner(), nil
}
