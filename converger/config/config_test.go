package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	libconfig "drover.dev/lib/config"
	"drover.dev/lib/tlsconfig"
)

func TestDefaultIsValid(t *testing.T) {
	cfg := Default()
	require.NoError(t, cfg.Validate())
	require.Equal(t, DefaultRepeatInterval, cfg.RepeatInterval.Duration())
	require.Equal(t, 30*time.Second, cfg.StaleUnclaimedDuration.Duration())
	require.Equal(t, 30*time.Second, cfg.KickTaskDuration.Duration())
	require.Equal(t, 30*time.Minute, cfg.ExpirePendingTaskDuration.Duration())
	require.Equal(t, 120*time.Second, cfg.ExpireCompletedTaskDuration.Duration())
	require.Equal(t, "converger", LockKey)
	cfg.DebugAddress, cfg.DebugAdminAddress = "0.0.0.0:9020", "off"
	require.NoError(t, cfg.Validate(), "metrics on any address once pprof and /log-level are off")
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"debug address", func(c *Config) { c.DebugAddress = "" }, `debug_address: is required`},
		{"debug address port", func(c *Config) { c.DebugAddress = "localhost" }, `debug_address: must be host:port, got "localhost"`},
		{"debug address routable with pprof on it", func(c *Config) { c.DebugAddress = "0.0.0.0:9020" }, `debug_address: "0.0.0.0:9020" is not a loopback address, and pprof and /log-level are served there`},
		{"debug admin address routable", func(c *Config) { c.DebugAdminAddress = "0.0.0.0:9021" }, `debug_admin_address: "0.0.0.0:9021" is not a loopback address`},
		{"bbs address", func(c *Config) { c.BBSAddress = "bbs" }, `bbs_address: must be host:port, got "bbs"`},
		{"tls incomplete", func(c *Config) { c.TLS = tlsconfig.Files{CAFile: "ca.pem"} }, "tls: cert_file is required"},
		{"repeat interval", func(c *Config) { c.RepeatInterval = 0 }, "repeat_interval: must be positive, got 0s"},
		{"lock: retry not shorter than ttl (every rule: bbs/client/lock)", func(c *Config) { c.LockRetryInterval = libconfig.Duration(15 * time.Second) }, "lock_retry_interval: must be shorter than lock_ttl (15s), got 15s"},
		{"communication timeout", func(c *Config) { c.CommunicationTimeout = -1 }, "communication_timeout: must be positive, got -1ns"},
		{"stale unclaimed", func(c *Config) { c.StaleUnclaimedDuration = 0 }, "stale_unclaimed_duration: must be positive, got 0s"},
		{"kick task", func(c *Config) { c.KickTaskDuration = 0 }, "kick_task_duration: must be positive, got 0s"},
		{"expire pending", func(c *Config) { c.ExpirePendingTaskDuration = 0 }, "expire_pending_task_duration: must be positive, got 0s"},
		{"expire completed", func(c *Config) { c.ExpireCompletedTaskDuration = 0 }, "expire_completed_task_duration: must be positive, got 0s"},
		{"apply workers", func(c *Config) { c.ApplyWorkers = 0 }, "apply_workers: must be positive, got 0"},
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
		path := filepath.Join(t.TempDir(), "converger.json")
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	cfg, err := Load(write(t, `{"repeat_interval": "5s", "kick_task_duration": "10s", "lock_owner": "c-1"}`))
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, cfg.RepeatInterval.Duration())
	require.Equal(t, 10*time.Second, cfg.KickTaskDuration.Duration())
	require.Equal(t, "c-1", cfg.LockOwner)
	require.Equal(t, DefaultBBSAddress, cfg.BBSAddress, "defaults kept")

	_, err = Load(write(t, `{"repeat_intervall": "5s"}`))
	require.ErrorContains(t, err, "repeat_intervall")
	_, err = Load(write(t, `{"repeat_interval": "0s"}`))
	require.ErrorContains(t, err, "repeat_interval: must be positive")
	_, err = Load(filepath.Join(t.TempDir(), "missing.json"))
	require.Error(t, err)
}
