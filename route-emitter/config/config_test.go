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
}

func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(c *Config)
	}{
		{"listen_address", func(c *Config) { c.ListenAddress = "nope" }},
		{"nats_addresses", func(c *Config) { c.NATSAddresses = nil }},
		{"nats_addresses", func(c *Config) { c.NATSAddresses = []string{"::"} }},
		{"nats_password", func(c *Config) { c.NATSUsername = "u" }},
		{"sync_interval", func(c *Config) { c.SyncInterval = 0 }},
		{"jitter_factor", func(c *Config) { c.JitterFactor = 1 }},
		{"max_messages_per_second", func(c *Config) { c.MaxMessagesPerSecond = 0 }},
		{"unregistration_send_count", func(c *Config) { c.UnregistrationSendCount = -1 }},
		{"lock_retry_interval", func(c *Config) { c.LockRetryInterval = c.LockTTL }},
		{"log_level", func(c *Config) { c.LogLevel = "loud" }},
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
