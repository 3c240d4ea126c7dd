package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultsAreValid(t *testing.T) {
	c := Default()
	require.NoError(t, c.Validate())
	assert.False(t, c.LocalMode())
	c.DebugAddress, c.DebugAdminAddress = "0.0.0.0:17009", "127.0.0.1:17011"
	require.NoError(t, c.Validate(), "metrics on any address once pprof and /log-level are elsewhere")
}

func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(c *Config)
	}{
		{"listen_address", func(c *Config) { c.ListenAddress = "nope" }},
		{"debug_address", func(c *Config) { c.DebugAddress = "0.0.0.0:17009" }},
		{"debug_admin_address", func(c *Config) { c.DebugAdminAddress = "0.0.0.0:17011" }},
		{"nats_addresses", func(c *Config) { c.NATSAddresses = nil }},
		{"nats_addresses", func(c *Config) { c.NATSAddresses = []string{"::"} }},
		{"nats_password", func(c *Config) { c.NATSUsername = "u" }},
		{"nats_password_file", func(c *Config) { c.NATSUsername, c.NATSPassword, c.NATSPasswordFile = "u", "p", "/f" }},
		{"nats_username", func(c *Config) { c.NATSPasswordFile = "/f" }},
		{"sync_interval", func(c *Config) { c.SyncInterval = 0 }},
		{"jitter_factor", func(c *Config) { c.JitterFactor = 1 }},
		{"max_messages_per_second", func(c *Config) { c.MaxMessagesPerSecond = 0 }},
		{"unregistration_send_count", func(c *Config) { c.UnregistrationSendCount = -1 }},
		{"lock_retry_interval", func(c *Config) { c.LockRetryInterval = c.LockTTL }},
		{"log_level", func(c *Config) { c.LogLevel = "loud" }},
		{`identity_common_names: "alice" has role "cell"`, func(c *Config) { c.IdentityCommonNames = map[string]string{"alice": "cell"} }},
	} {
		c := Default()
		tc.edit(&c)
		assert.ErrorContains(t, c.Validate(), tc.field)
	}
}

func TestLoadOverDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"cell_id":"cell-1","sync_interval":"5s"}`), 0o600))
	c, err := Load(path)
	require.NoError(t, err)
	assert.True(t, c.LocalMode())
	assert.Equal(t, "5s", c.SyncInterval.String())
	assert.Equal(t, DefaultListenAddress, c.ListenAddress)
}
