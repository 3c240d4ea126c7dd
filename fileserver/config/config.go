// Package config is the fileserver's configuration: one JSON file, validated at start.
package config

import (
	"errors"
	"os"

	"drover.dev/fileserver/signedurl"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"
)

// Defaults (reference/routing.md §4 and issue 6).
const (
	DefaultServerAddress   = "0.0.0.0:8080"
	DefaultDebugAddress    = "127.0.0.1:17005"
	DefaultLogLevel        = "info"
	DefaultMaxPackageBytes = int64(1) << 30
	DefaultMaxPackageFiles = 100000
	DefaultMaxBlobBytes    = int64(4) << 30
)

// Config is the fileserver's configuration file.
type Config struct {
	ServerAddress string `json:"server_address"`
	// StaticDirectory is served read-only under /v1/static/.
	StaticDirectory string `json:"static_directory"`
	// BlobDirectory holds pool/, blobs/ and tmp/.
	BlobDirectory string `json:"blob_directory"`
	// SigningKeyFile holds the HMAC key of signed upload URLs (file bytes, trimmed).
	SigningKeyFile string `json:"signing_key_file"`
	DebugAddress   string `json:"debug_address"`
	LogLevel       string `json:"log_level"`
	// MaxPackageBytes caps a package: the sum of its files and any one zip entry.
	MaxPackageBytes int64 `json:"max_package_bytes"`
	// MaxPackageFiles caps the files listed in (and uploaded with) a package.
	MaxPackageFiles int `json:"max_package_files"`
	// MaxBlobBytes caps one blob upload (a droplet, say).
	MaxBlobBytes int64 `json:"max_blob_bytes"`
}

// Default returns a configuration with every default filled in.
func Default() Config {
	return Config{
		ServerAddress:   DefaultServerAddress,
		DebugAddress:    DefaultDebugAddress,
		LogLevel:        DefaultLogLevel,
		MaxPackageBytes: DefaultMaxPackageBytes,
		MaxPackageFiles: DefaultMaxPackageFiles,
		MaxBlobBytes:    DefaultMaxBlobBytes,
	}
}

// Load reads and validates the file at path over the defaults.
func Load(path string) (*Config, error) {
	return libconfig.LoadOver(path, Default())
}

// Validate names the problem of every field that is wrong. It reads the signing key
// file to check its length.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("nil config")
	}
	var errs []error
	errs = append(errs, libconfig.Addresses([][2]string{{"server_address", c.ServerAddress}, {"debug_address", c.DebugAddress}})...)
	for _, d := range []struct{ field, dir string }{
		{"static_directory", c.StaticDirectory}, {"blob_directory", c.BlobDirectory},
	} {
		if err := directory(d.field, d.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if c.SigningKeyFile == "" {
		errs = append(errs, libconfig.Invalid("signing_key_file", "is required"))
	} else if _, err := c.SigningKey(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxPackageBytes <= 0 {
		errs = append(errs, libconfig.Invalid("max_package_bytes", "must be positive, got %d", c.MaxPackageBytes))
	}
	if c.MaxPackageFiles <= 0 {
		errs = append(errs, libconfig.Invalid("max_package_files", "must be positive, got %d", c.MaxPackageFiles))
	}
	if c.MaxBlobBytes <= 0 {
		errs = append(errs, libconfig.Invalid("max_blob_bytes", "must be positive, got %d", c.MaxBlobBytes))
	}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, libconfig.Invalid("log_level", "%v", err))
	}
	return errors.Join(errs...)
}

// SigningKey reads the signing key file (signedurl.ReadKey).
func (c *Config) SigningKey() ([]byte, error) {
	key, err := signedurl.ReadKey(c.SigningKeyFile)
	if err != nil {
		return nil, libconfig.Invalid("signing_key_file", "%v", err)
	}
	return key, nil
}

// directory checks that dir is set and, when it exists, is a directory (the blob
// directory is created at start when missing; the static one must exist).
func directory(field, dir string) error {
	if dir == "" {
		return libconfig.Invalid(field, "is required")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) && field == "blob_directory":
		return nil
	case err != nil:
		return libconfig.Invalid(field, "%v", err)
	case !fi.IsDir():
		return libconfig.Invalid(field, "%s is not a directory", dir)
	}
	return nil
}
