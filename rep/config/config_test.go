package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/tlsconfig"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func valid() Config {
	c := Default()
	c.CellID = "cell-1"
	c.Executor.ContainerdSocket = "/run/containerd.sock"
	c.Executor.StateDir = "/var/lib/drover"
	return c
}

func TestDefaultsWithRequiredFieldsAreValid(t *testing.T) {
	c := valid()
	require.NoError(t, c.Validate())
	sim := valid()
	sim.Executor.Backend = "sim"
	sim.Executor.ContainerdSocket = ""
	sim.Executor.Subnet = "not checked for sim"
	require.NoError(t, sim.Validate())
	remote := valid()
	remote.DebugAddress, remote.DebugAdminAddress = "0.0.0.0:1801", "unix:/run/drover/rep-debug.sock"
	require.NoError(t, remote.Validate(), "metrics on any address once pprof and /log-level are elsewhere")
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		field  string
		mutate func(*Config)
	}{
		{"cell_id", func(c *Config) { c.CellID = " " }},
		{"listen_address", func(c *Config) { c.ListenAddress = "" }},
		{"listen_address", func(c *Config) { c.ListenAddress = "nope" }},
		{"debug_address", func(c *Config) { c.DebugAddress = "nope" }},
		{"debug_address", func(c *Config) { c.DebugAddress = "0.0.0.0:1801" }},
		{"debug_admin_address", func(c *Config) { c.DebugAdminAddress = "10.0.0.5:1802" }},
		{"debug_admin_address", func(c *Config) { c.DebugAdminAddress = "unix:rep.sock" }},
		{"bbs_address", func(c *Config) { c.BBSAddress = "" }},
		{"advertise_address", func(c *Config) { c.AdvertiseAddress = "host-without-port" }},
		{"tls", func(c *Config) { c.TLS = tlsconfig.Files{CAFile: "ca.crt"} }},
		{"memory_mb", func(c *Config) { c.MemoryMB = 0 }},
		{"disk_mb", func(c *Config) { c.DiskMB = -1 }},
		{"containers", func(c *Config) { c.Containers = 0 }},
		{"presence_interval", func(c *Config) { c.PresenceInterval = c.PresenceTTL }},
		{"presence_interval", func(c *Config) { c.PresenceTTL = 0 }},
		{"polling_interval", func(c *Config) { c.PollingInterval = 0 }},
		{"evacuation_timeout", func(c *Config) { c.EvacuationTimeout = 0 }},
		{"evacuation_polling_interval", func(c *Config) { c.EvacuationPollingInterval = 0 }},
		{"evacuation_polling_interval", func(c *Config) { c.EvacuationPollingInterval = c.EvacuationTimeout + 1 }},
		{"log_level", func(c *Config) { c.LogLevel = "loud" }},
		{`identity_common_names: "x" has role "root"`, func(c *Config) { c.IdentityCommonNames = map[string]string{"x": "root"} }},
		{"executor.backend", func(c *Config) { c.Executor.Backend = "garden" }},
		{"executor.containerd_socket", func(c *Config) { c.Executor.ContainerdSocket = "" }},
		{"executor.subnet", func(c *Config) { c.Executor.Subnet = "10.0.0.0" }},
		{"executor.external_ip", func(c *Config) { c.Executor.ExternalIP = "localhost" }},
		{"executor.port_range_start", func(c *Config) { c.Executor.PortRangeStart = 0 }},
		{"executor.port_range_start", func(c *Config) { c.Executor.PortRangeEnd = 70000 }},
		{"executor.port_range_start", func(c *Config) { c.Executor.PortRangeStart, c.Executor.PortRangeEnd = 62000, 61000 }},
		{"executor.sim_failure_rate", func(c *Config) { c.Executor.Backend = "sim"; c.Executor.SimFailureRate = 1.5 }},
		{"executor.state_dir", func(c *Config) { c.Executor.StateDir = "" }},
		{"executor.grace_period", func(c *Config) { c.Executor.GracePeriod = 0 }},
		{"executor.reserved_expiration", func(c *Config) { c.Executor.ReservedExpiration = -1 }},
		{"executor.unhealthy_interval", func(c *Config) { c.Executor.UnhealthyInterval = 0 }},
		{"executor.healthy_interval", func(c *Config) { c.Executor.HealthyInterval = 0 }},
		{"executor.metrics_interval", func(c *Config) { c.Executor.MetricsInterval = 0 }},
		{"executor.reap_interval", func(c *Config) { c.Executor.ReapInterval = 0 }},
		{"executor.disk_poll_interval", func(c *Config) { c.Executor.DiskPollInterval = 0 }},
		{"executor.max_cache_bytes", func(c *Config) { c.Executor.MaxCacheBytes = 0 }},
		{"executor.log_lines_per_instance", func(c *Config) { c.Executor.LogLinesPerInstance = 0 }},
		{"executor.default_registry", func(c *Config) { c.Executor.DefaultRegistry = "" }},
		{"executor.default_registry", func(c *Config) { c.Executor.DefaultRegistry = "https://registry.local" }},
		{"executor.default_registry", func(c *Config) { c.Executor.DefaultRegistry = "registry.local/path" }},
		{"executor.insecure_registries[1]", func(c *Config) { c.Executor.InsecureRegistries = []string{"127.0.0.1:5000", "user@host"} }},
		{"executor.insecure_registries", func(c *Config) {
			c.Executor.InsecureRegistries = make([]string, MaxInsecureRegistries+1)
			for i := range c.Executor.InsecureRegistries {
				c.Executor.InsecureRegistries[i] = "r.local:5000"
			}
		}},
		{"executor.registry_ca_file", func(c *Config) { c.Executor.RegistryCAFile = "ca.pem" }},
		{"executor.image_gc_grace", func(c *Config) { c.Executor.ImageGCGrace = -1 }},
		{"executor.image_pull_timeout", func(c *Config) { c.Executor.ImagePullTimeout = 0 }},
		{"executor.default_egress_rules[1].protocol", func(c *Config) {
			c.Executor.DefaultEgressRules = []*modelsv1.EgressRule{
				{Protocol: "udp", Destinations: []string{"10.0.0.53"}, Ports: []uint32{53}},
				{Protocol: "icmpv6", Destinations: []string{"10.0.0.1"}},
			}
		}},
		{"executor.default_egress_rules[0].icmp_info.code", func(c *Config) {
			typ := int32(8)
			c.Executor.DefaultEgressRules = []*modelsv1.EgressRule{{Protocol: "icmp", Destinations: []string{"10.0.0.1"}, IcmpInfo: &modelsv1.ICMPInfo{Type: &typ}}}
		}},
		{"executor.default_egress_rules[0].destinations[0]", func(c *Config) {
			c.Executor.DefaultEgressRules = []*modelsv1.EgressRule{{Protocol: "all", Destinations: []string{"10.0.0.9-10.0.0.1"}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			c := valid()
			tt.mutate(&c)
			err := c.Validate()
			require.Error(t, err)
			var fe *libconfig.FieldError
			require.ErrorAs(t, err, &fe)
			require.Contains(t, err.Error(), tt.field)
		})
	}
	var nilConfig *Config
	require.Error(t, nilConfig.Validate())
}

func TestAdvertised(t *testing.T) {
	c := valid()
	require.Equal(t, DefaultListenAddress, c.Advertised())
	c.AdvertiseAddress = "10.0.0.5:1800"
	require.Equal(t, "10.0.0.5:1800", c.Advertised())
}

func TestLoadKeepsDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rep.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"cell_id":"cell-7","executor":{"backend":"sim","state_dir":"/tmp/x"}}`), 0o600))
	c, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, "cell-7", c.CellID)
	require.Equal(t, DefaultPresenceTTL, c.PresenceTTL.Duration())
	require.Equal(t, "sim", c.Executor.Backend)
	require.Equal(t, DefaultReapInterval, c.Executor.ReapInterval.Duration())
	require.False(t, c.EvacuateOnSigterm)
	require.Equal(t, 10*time.Minute, c.EvacuationTimeout.Duration())
	require.Equal(t, 10*time.Second, c.EvacuationPollingInterval.Duration())

	require.NoError(t, os.WriteFile(path, []byte(`{"executor":{"backend":"sim","state_dir":"/tmp/x"}}`), 0o600))
	_, err = Load(path)
	require.ErrorContains(t, err, "cell_id")
}

func TestLoadRegistrySettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rep.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"cell_id":"cell-7","executor":{"backend":"sim","state_dir":"/tmp/x"}}`), 0o600))
	c, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, "docker.io", c.Executor.DefaultRegistry)
	require.Empty(t, c.Executor.InsecureRegistries)
	require.Equal(t, 10*time.Minute, c.Executor.ImageGCGrace.Duration())
	require.Equal(t, 5*time.Minute, c.Executor.ImagePullTimeout.Duration())

	require.NoError(t, os.WriteFile(path, []byte(`{"cell_id":"cell-7","executor":{"backend":"sim","state_dir":"/tmp/x",
		"default_registry":"127.0.0.1:5000","insecure_registries":["127.0.0.1:5000","[::1]:5001"],
		"registry_ca_file":"/etc/drover/ca.pem","image_gc_grace":"0s","image_pull_timeout":"1m"}}`), 0o600))
	c, err = Load(path)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:5000", c.Executor.DefaultRegistry)
	require.Equal(t, []string{"127.0.0.1:5000", "[::1]:5001"}, c.Executor.InsecureRegistries)
	require.Equal(t, "/etc/drover/ca.pem", c.Executor.RegistryCAFile)
	require.Zero(t, c.Executor.ImageGCGrace.Duration())
	require.Equal(t, time.Minute, c.Executor.ImagePullTimeout.Duration())
}

func TestLoadEvacuationSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rep.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"cell_id":"cell-7","executor":{"backend":"sim","state_dir":"/tmp/x"},
		"evacuate_on_sigterm":true,"evacuation_timeout":"2m","evacuation_polling_interval":"1s"}`), 0o600))
	c, err := Load(path)
	require.NoError(t, err)
	require.True(t, c.EvacuateOnSigterm)
	require.Equal(t, 2*time.Minute, c.EvacuationTimeout.Duration())
	require.Equal(t, time.Second, c.EvacuationPollingInterval.Duration())
}

func TestUserNamespaceIsOffUnlessSet(t *testing.T) {
	require.Nil(t, Default().Executor.UserNamespace)
	c := valid()
	require.NoError(t, json.Unmarshal([]byte(`{"executor": {"user_namespace": null}}`), &c))
	require.Nil(t, c.Executor.UserNamespace)
	require.NoError(t, json.Unmarshal([]byte(`{"executor": {"user_namespace": {"host_uid": 100000, "host_gid": 200000, "size": 65536}}}`), &c))
	require.NoError(t, c.Validate())
	require.Equal(t, &executor.UserNamespace{HostUID: 100000, HostGID: 200000, Size: 65536}, c.Executor.UserNamespace)
}

func TestUserNamespaceValidationNamesEachField(t *testing.T) {
	for _, tc := range []struct {
		ns    executor.UserNamespace
		field string
	}{
		{executor.UserNamespace{HostUID: 0, HostGID: 1, Size: 65536}, "executor.user_namespace.host_uid"},
		{executor.UserNamespace{HostUID: 1, HostGID: -1, Size: 65536}, "executor.user_namespace.host_gid"},
		{executor.UserNamespace{HostUID: 1, HostGID: 1, Size: 1000}, "executor.user_namespace.size"},
		{executor.UserNamespace{HostUID: 4294967295 - 1000, HostGID: 1, Size: 65536}, "executor.user_namespace.host_uid"},
		{executor.UserNamespace{HostUID: 1, HostGID: 4294967295 - 1000, Size: 65536}, "executor.user_namespace.host_gid"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := valid()
			ns := tc.ns
			c.Executor.UserNamespace = &ns
			err := c.Validate()
			var fe *libconfig.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tc.field, fe.Field)
		})
	}
	c := valid()
	c.Executor.UserNamespace = &executor.UserNamespace{}
	err := c.Validate()
	for _, f := range []string{"executor.user_namespace.host_uid", "executor.user_namespace.host_gid", "executor.user_namespace.size"} {
		require.ErrorContains(t, err, f)
	}
}

func TestDefaultEgressRulesDecodeInTheLRPAPIShape(t *testing.T) {
	c := valid()
	require.NoError(t, json.Unmarshal([]byte(`{"executor": {"default_egress_rules": [
		{"protocol": "udp", "destinations": ["10.0.0.53"], "ports": [53]},
		{"protocol": "tcp", "destinations": ["10.0.0.0-10.0.0.9"], "port_range": {"start": 1, "end": 1024}, "log": true},
		{"protocol": "icmp", "destinations": ["10.0.0.1/32"], "icmp_info": {"type": 8, "code": 0}}]}}`), &c))
	require.NoError(t, c.Validate())
	require.Len(t, c.Executor.DefaultEgressRules, 3)
	require.Equal(t, uint32(1024), c.Executor.DefaultEgressRules[1].GetPortRange().GetEnd())
	require.Equal(t, int32(0), c.Executor.DefaultEgressRules[2].GetIcmpInfo().GetCode())
	require.NotNil(t, c.Executor.DefaultEgressRules[2].GetIcmpInfo().Code)
}
