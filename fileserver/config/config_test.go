package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// valid returns a valid configuration over real temporary directories and key file.
func valid(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("  0123456789abcdef-signing\n"), 0o600))
	cfg := Default()
	cfg.StaticDirectory = dir
	cfg.BlobDirectory = filepath.Join(dir, "blobs-not-yet-created")
	cfg.SigningKeyFile = keyFile
	return cfg
}

func TestDefaults(t *testing.T) {
	cfg := Default()
	require.Equal(t, "127.0.0.1:8080", cfg.ServerAddress, "loopback unless configured")
	require.Equal(t, "127.0.0.1:17005", cfg.DebugAddress)
	require.Equal(t, "", cfg.DebugAdminAddress)
	require.Equal(t, int64(1<<30), cfg.MaxPackageBytes)
	require.Equal(t, 100000, cfg.MaxPackageFiles)
	require.Equal(t, int64(32<<20), cfg.MaxPackageListBytes)
	require.Equal(t, int64(4<<20), cfg.MaxMatchBytes)
	require.Equal(t, 5000, cfg.MaxMatchResources)
	require.Equal(t, 8, cfg.MaxConcurrentMatches)
	v := valid(t)
	require.NoError(t, v.Validate())
	key, err := v.SigningKey()
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef-signing", string(key), "trimmed")
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, c *Config)
		want   string
	}{
		{"server address", func(_ *testing.T, c *Config) { c.ServerAddress = "8080" }, `server_address: must be host:port, got "8080"`},
		{"debug address", func(_ *testing.T, c *Config) { c.DebugAddress = "" }, "debug_address: is required"},
		{"debug address routable with pprof on it", func(_ *testing.T, c *Config) { c.DebugAddress = "0.0.0.0:17005" },
			`debug_address: "0.0.0.0:17005" is not a loopback address, and pprof and /log-level are served there`},
		{"debug admin address routable", func(_ *testing.T, c *Config) { c.DebugAdminAddress = "0.0.0.0:17006" }, `debug_admin_address: "0.0.0.0:17006" is not a loopback address`},
		{"static directory required", func(_ *testing.T, c *Config) { c.StaticDirectory = "" }, "static_directory: is required"},
		{"static directory missing", func(t *testing.T, c *Config) { c.StaticDirectory = filepath.Join(t.TempDir(), "nope") }, "static_directory: stat"},
		{"static directory a file", func(_ *testing.T, c *Config) { c.StaticDirectory = c.SigningKeyFile }, "static_directory: "},
		{"blob directory required", func(_ *testing.T, c *Config) { c.BlobDirectory = "" }, "blob_directory: is required"},
		{"signing key required", func(_ *testing.T, c *Config) { c.SigningKeyFile = "" }, "signing_key_file: is required"},
		{"signing key unreadable", func(t *testing.T, c *Config) { c.SigningKeyFile = filepath.Join(t.TempDir(), "nope") }, "signing_key_file: open"},
		{"signing key short", func(t *testing.T, c *Config) {
			require.NoError(t, os.WriteFile(c.SigningKeyFile, []byte("short          \n"), 0o600))
		}, "signing_key_file: key must be at least 16 bytes, got 5"},
		{"max package bytes", func(_ *testing.T, c *Config) { c.MaxPackageBytes = 0 }, "max_package_bytes: must be positive, got 0"},
		{"max package files", func(_ *testing.T, c *Config) { c.MaxPackageFiles = -1 }, "max_package_files: must be positive, got -1"},
		{"max blob bytes", func(_ *testing.T, c *Config) { c.MaxBlobBytes = 0 }, "max_blob_bytes: must be positive, got 0"},
		{"max package list bytes", func(_ *testing.T, c *Config) { c.MaxPackageListBytes = 0 }, "max_package_list_bytes: must be positive, got 0"},
		{"max match bytes", func(_ *testing.T, c *Config) { c.MaxMatchBytes = -1 }, "max_match_bytes: must be positive, got -1"},
		{"max match resources", func(_ *testing.T, c *Config) { c.MaxMatchResources = 0 }, "max_match_resources: must be positive, got 0"},
		{"max concurrent matches", func(_ *testing.T, c *Config) { c.MaxConcurrentMatches = 0 }, "max_concurrent_matches: must be positive, got 0"},
		{"log level", func(_ *testing.T, c *Config) { c.LogLevel = "loud" }, "log_level:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid(t)
			tt.mutate(t, &cfg)
			err := cfg.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
	var nilConfig *Config
	require.EqualError(t, nilConfig.Validate(), "nil config")
}

func TestLoad(t *testing.T) {
	v := valid(t)
	path := filepath.Join(t.TempDir(), "fileserver.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"static_directory": "`+v.StaticDirectory+`", "blob_directory": "`+v.BlobDirectory+
		`", "signing_key_file": "`+v.SigningKeyFile+`", "max_package_files": 7, "max_match_bytes": 1000, "max_match_resources": 9, "max_concurrent_matches": 2,`+
		` "max_package_list_bytes": 5000, "server_address": "0.0.0.0:8080", "debug_address": "0.0.0.0:17005", "debug_admin_address": "off"}`), 0o600))
	cfg, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, 7, cfg.MaxPackageFiles)
	require.Equal(t, int64(1000), cfg.MaxMatchBytes)
	require.Equal(t, 9, cfg.MaxMatchResources)
	require.Equal(t, 2, cfg.MaxConcurrentMatches)
	require.Equal(t, int64(5000), cfg.MaxPackageListBytes)
	require.Equal(t, "0.0.0.0:8080", cfg.ServerAddress)
	require.Equal(t, "off", cfg.DebugAdminAddress)
	require.Equal(t, DefaultLogLevel, cfg.LogLevel, "defaults kept")

	require.NoError(t, os.WriteFile(path, []byte(`{"static_dir": "x"}`), 0o600))
	_, err = Load(path)
	require.ErrorContains(t, err, "static_dir")
	require.NoError(t, os.WriteFile(path, []byte(`{}`), 0o600))
	_, err = Load(path)
	require.ErrorContains(t, err, "static_directory: is required")
}
