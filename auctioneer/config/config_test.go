package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/client/lock"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/tlsconfig"
)

func TestDefaultIsValid(t *testing.T) {
	cfg := Default()
	require.NoError(t, cfg.Validate())
	require.Equal(t, lock.DefaultTTL, cfg.LockTTL.Duration())
	require.Equal(t, DefaultStartingContainerWeight, cfg.StartingContainerWeight)
	require.Equal(t, DefaultAuctionRunnerWorkers, cfg.AuctionRunnerWorkers)
	cfg.DebugAddress, cfg.DebugAdminAddress = "0.0.0.0:9017", "unix:/run/drover/auctioneer-debug.sock"
	require.NoError(t, cfg.Validate(), "metrics on any address once pprof and /log-level are elsewhere")
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"listen address", func(c *Config) { c.ListenAddress = "nope" }, `listen_address: must be host:port, got "nope"`},
		{"debug address", func(c *Config) { c.DebugAddress = "" }, `debug_address: is required`},
		{"debug address port", func(c *Config) { c.DebugAddress = "localhost" }, `debug_address: must be host:port, got "localhost"`},
		{"debug address routable with pprof on it", func(c *Config) { c.DebugAddress = "0.0.0.0:9017" }, `debug_address: "0.0.0.0:9017" is not a loopback address, and pprof and /log-level are served there`},
		{"debug admin address routable", func(c *Config) { c.DebugAdminAddress = "0.0.0.0:9018" }, `debug_admin_address: "0.0.0.0:9018" is not a loopback address`},
		{"bbs address", func(c *Config) { c.BBSAddress = "bbs" }, `bbs_address: must be host:port, got "bbs"`},
		{"tls incomplete", func(c *Config) { c.TLS = tlsconfig.Files{CAFile: "ca.pem"} }, "tls: cert_file is required"},
		{"cell state timeout", func(c *Config) { c.CellStateTimeout = 0 }, "cell_state_timeout: must be positive, got 0s"},
		{"communication timeout", func(c *Config) { c.CommunicationTimeout = -1 }, "communication_timeout: must be positive, got -1ns"},
		{"lock: retry not shorter than ttl (every rule: bbs/client/lock)", func(c *Config) { c.LockRetryInterval = libconfig.Duration(15 * time.Second) }, "lock_retry_interval: must be shorter than lock_ttl (15s), got 15s"},
		{"workers", func(c *Config) { c.AuctionRunnerWorkers = 0 }, "auction_runner_workers: must be positive, got 0"},
		{"identity common names", func(c *Config) { c.IdentityCommonNames = map[string]string{"cell:x": "operator"} },
			`identity_common_names: "cell:x" starts with the cell prefix "cell:"`},
		{"starting container weight", func(c *Config) { c.StartingContainerWeight = -0.1 }, "starting_container_weight: must not be negative, got -0.1"},
		{"bin pack weight", func(c *Config) { c.BinPackFirstFitWeight = -1 }, "bin_pack_first_fit_weight: must not be negative, got -1"},
		{"in-flight maximum", func(c *Config) { c.StartingContainerCountMaximum = -1 }, "starting_container_count_maximum: must not be negative, got -1"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, "log_level:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			tt.mutate(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
	var nilConfig *Config
	require.EqualError(t, nilConfig.Validate(), "nil config")
}

func TestLoad(t *testing.T) {
	write := func(t *testing.T, content string) string {
		path := filepath.Join(t.TempDir(), "auctioneer.json")
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	cfg, err := Load(write(t, `{"listen_address": "127.0.0.1:0", "cell_state_timeout": "2s", "bin_pack_first_fit_weight": 0.5}`))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:0", cfg.ListenAddress)
	require.Equal(t, 2*time.Second, cfg.CellStateTimeout.Duration())
	require.Equal(t, 0.5, cfg.BinPackFirstFitWeight)
	require.Equal(t, DefaultBBSAddress, cfg.BBSAddress, "defaults kept")

	_, err = Load(write(t, `{"listen_adress": "x:1"}`))
	require.ErrorContains(t, err, "listen_adress")
	_, err = Load(write(t, `{"lock_ttl": "1s"}`))
	require.ErrorContains(t, err, "lock_retry_interval: must be shorter than lock_ttl")
}
