package network

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func validConfig() Config {
	return Config{
		StateDir:       "/tmp/state",
		CNIBinDir:      "/usr/lib/cni",
		BridgeName:     "drover1",
		Subnet:         "10.88.1.0/24",
		ExternalIP:     "127.0.0.1",
		PortRangeStart: 61000,
		PortRangeEnd:   61099,
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"valid", func(*Config) {}, ""},
		{"no state dir", func(c *Config) { c.StateDir = "" }, "state_dir is required"},
		{"relative state dir", func(c *Config) { c.StateDir = "state" }, "state_dir \"state\" must be an absolute path"},
		{"no bridge", func(c *Config) { c.BridgeName = "" }, "bridge_name is required"},
		{"long bridge", func(c *Config) { c.BridgeName = "drover-bridge-123" }, "longer than 15"},
		{"bad bridge chars", func(c *Config) { c.BridgeName = "br/1" }, "may only contain"},
		{"bad subnet", func(c *Config) { c.Subnet = "10.88.1.0" }, "subnet \"10.88.1.0\" is not a CIDR"},
		{"ipv6 subnet", func(c *Config) { c.Subnet = "fd00::/64" }, "must be IPv4"},
		{"tiny subnet", func(c *Config) { c.Subnet = "10.88.1.0/30" }, "too small"},
		{"bad external ip", func(c *Config) { c.ExternalIP = "cell-1" }, "external_ip \"cell-1\""},
		{"zero start", func(c *Config) { c.PortRangeStart = 0 }, "port_range_start 0"},
		{"end before start", func(c *Config) { c.PortRangeEnd = 60000 }, "port_range_end 60000"},
		{"end too big", func(c *Config) { c.PortRangeEnd = 70000 }, "port_range_end 70000"},
		{"single port range", func(c *Config) { c.PortRangeEnd = c.PortRangeStart }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg := validConfig()
	cfg.CNIBinDir = ""
	assert.Equal(t, DefaultCNIBinDir, cfg.withDefaults().CNIBinDir)
}

func TestConflistKeepsEverythingPerCell(t *testing.T) {
	data, err := conflistJSON(validConfig())
	require.NoError(t, err)
	var list struct {
		Name    string           `json:"name"`
		Plugins []map[string]any `json:"plugins"`
	}
	require.NoError(t, json.Unmarshal(data, &list))
	assert.Equal(t, "drover-drover1", list.Name)
	require.Len(t, list.Plugins, 2)
	bridge := list.Plugins[0]
	assert.Equal(t, "bridge", bridge["type"])
	assert.Equal(t, "drover1", bridge["bridge"])
	assert.Equal(t, true, bridge["isGateway"])
	assert.Equal(t, true, bridge["ipMasq"])
	ipam := bridge["ipam"].(map[string]any)
	assert.Equal(t, "host-local", ipam["type"])
	assert.Equal(t, "/tmp/state/ipam", ipam["dataDir"])
	assert.Equal(t, "portmap", list.Plugins[1]["type"])
	assert.Equal(t, true, list.Plugins[1]["snat"])
}
