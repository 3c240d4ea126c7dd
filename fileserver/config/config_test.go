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
	require.Equal(t, "0.0.0.0:8080", cfg.ServerAddress)
	require.Equal(t, "127.0.0.1:17005", cfg.DebugAddress)
	require.Equal(t, int64(1<<30), cfg.MaxPackageBytes)
	require.Equal(t, 100000, cfg.MaxPackageFiles)
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
		`", "signing_key_file": "`+v.SigningKeyFile+`", "max_package_files": 7}`), 0o600))
	cfg, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, 7, cfg.MaxPackageFiles)
	require.Equal(t, DefaultServerAddress, cfg.ServerAddress, "defaults kept")

	require.NoError(t, os.WriteFile(path, []byte(`{"static_dir": "x"}`), 0o600))
	_, err = Load(path)
	require.ErrorContains(t, err, "static_dir")
	require.NoError(t, os.WriteFile(path, []byte(`{}`), 0o600))
	_, err = Load(path)
	require.ErrorContains(t, err, "static_directory: is required")
}
