// Package config is the fileserver's configuration: one JSON file, validated at start.
package config

import (
	"errors"
	"os"

	"drover.dev/fileserver/signedurl"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"
)

// Defaults (reference/routing.md §4, issues 6 and 12). The server listens on loopback
// unless configured otherwise.
const (
	DefaultServerAddress       = "127.0.0.1:8080"
	DefaultDebugAddress        = "127.0.0.1:17005"
	DefaultLogLevel            = "info"
	DefaultMaxPackageBytes     = int64(1) << 30
	DefaultMaxPackageFiles     = 100000
	DefaultMaxPackageListBytes = int64(32) << 20
	DefaultMaxBlobBytes        = int64(4) << 30
	// DefaultMaxMatchResources is Cloud Controller's cap on one resource match.
	DefaultMaxMatchResources    = 5000
	DefaultMaxMatchBytes        = int64(4) << 20
	DefaultMaxConcurrentMatches = 8
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
	// DebugAdminAddress is where pprof and /log-level are served: "" on debug_address
	// (which must then be loopback), "off", "unix:PATH" or a loopback host:port.
	DebugAdminAddress string `json:"debug_admin_address"`
	LogLevel          string `json:"log_level"`
	// MaxPackageBytes caps a package: the sum of its files and any one zip entry.
	MaxPackageBytes int64 `json:"max_package_bytes"`
	// MaxPackageFiles caps the files listed in (and uploaded with) a package.
	MaxPackageFiles int `json:"max_package_files"`
	// MaxPackageListBytes caps the "resources" field (the file list) of a package upload.
	MaxPackageListBytes int64 `json:"max_package_list_bytes"`
	// MaxBlobBytes caps one blob upload (a droplet, say).
	MaxBlobBytes int64 `json:"max_blob_bytes"`
	// MaxMatchBytes caps a resource_match body, which needs no signature.
	MaxMatchBytes int64 `json:"max_match_bytes"`
	// MaxMatchResources caps the entries of one resource_match.
	MaxMatchResources int `json:"max_match_resources"`
	// MaxConcurrentMatches caps the resource matches in progress (503 above).
	MaxConcurrentMatches int `json:"max_concurrent_matches"`
}

// Default returns a configuration with every default filled in.
func Default() Config {
	return Config{
		ServerAddress:        DefaultServerAddress,
		DebugAddress:         DefaultDebugAddress,
		LogLevel:             DefaultLogLevel,
		MaxPackageBytes:      DefaultMaxPackageBytes,
		MaxPackageFiles:      DefaultMaxPackageFiles,
		MaxBlobBytes:         DefaultMaxBlobBytes,
		MaxPackageListBytes:  DefaultMaxPackageListBytes,
		MaxMatchBytes:        DefaultMaxMatchBytes,
		MaxMatchResources:    DefaultMaxMatchResources,
		MaxConcurrentMatches: DefaultMaxConcurrentMatches,
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
	errs = append(errs, libconfig.Addresses([][2]string{{"server_address", c.ServerAddress}})...)
	errs = append(errs, libconfig.DebugServer(c.DebugAddress, c.DebugAdminAddress))
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
	for _, f := range []struct {
		field string
		value int64
	}{
		{"max_package_bytes", c.MaxPackageBytes}, {"max_package_files", int64(c.MaxPackageFiles)}, {"max_package_list_bytes", c.MaxPackageListBytes}, {"max_blob_bytes", c.MaxBlobBytes}, {"max_match_bytes", c.MaxMatchBytes},
		{"max_match_resources", int64(c.MaxMatchResources)}, {"max_concurrent_matches", int64(c.MaxConcurrentMatches)},
	} {
		if f.value <= 0 {
			errs = append(errs, libconfig.Invalid(f.field, "must be positive, got %d", f.value))
		}
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
