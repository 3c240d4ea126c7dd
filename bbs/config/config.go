// Package config is the BBS process configuration: one JSON file, defaults for
// everything optional, and validation whose errors name the offending field.
package config

import (
	"errors"
	"log/slog"
	"sort"
	"strings"
	"time"

	"drover.dev/lib/authz"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"
	"drover.dev/lib/tlsconfig"
)

// Defaults of the optional fields.
const (
	DefaultGRPCAddress            = "127.0.0.1:8889"
	DefaultHTTPAddress            = "127.0.0.1:8888"
	DefaultDebugAddress           = "127.0.0.1:8890"
	DefaultMaxDatabaseConnections = 50
	DefaultEventRetention         = 24 * time.Hour
	DefaultEventRetentionCount    = 100000
	DefaultMaxRequestBodyBytes    = 1 << 20
	// DefaultMaxSubscribersPerIdentity caps the event streams one certificate holds open.
	DefaultMaxSubscribersPerIdentity = 64
	// MaxMaxSubscribersPerIdentity is the largest max_subscribers_per_identity.
	MaxMaxSubscribersPerIdentity = 10000
	// DefaultEventWriteTimeout is how long one event may take to reach a subscriber.
	DefaultEventWriteTimeout = 30 * time.Second
	// DefaultCellIdentityPrefix starts the common name of a rep's certificate ("cell:cell-1").
	DefaultCellIdentityPrefix = authz.DefaultCellPrefix
	DefaultMaxTaskRetries     = 3
	// DefaultTaskCallbackTimeout is upstream's callback HTTP timeout.
	DefaultTaskCallbackTimeout = 20 * time.Second
	DefaultLogLevel            = "info"
	// MaxKeyLabelLength is the longest encryption key label (as upstream Diego).
	MaxKeyLabelLength = 127
)

// Config is the BBS configuration file.
type Config struct {
	// GRPCAddress is where the mTLS gRPC API listens.
	GRPCAddress string `json:"grpc_address"`
	// HTTPAddress is where the HTTPS JSON API listens (same mTLS policy as gRPC).
	HTTPAddress string `json:"http_address"`
	// DebugAddress serves /metrics and /healthz (and, without DebugAdminAddress, pprof
	// and /log-level) over plain HTTP.
	DebugAddress string `json:"debug_address"`
	// DebugAdminAddress is where pprof and /log-level are served: "" on debug_address
	// (which must then be loopback), "off", "unix:PATH" or a loopback host:port.
	DebugAdminAddress string `json:"debug_admin_address"`
	// DatabaseURL is the Postgres connection string.
	DatabaseURL string `json:"database_url"`
	// DatabasePasswordFile, when set, holds the database password (kept out of this
	// file and of logs); database_url then has none.
	DatabasePasswordFile string `json:"database_password_file,omitempty"`
	// MaxDatabaseConnections caps the connection pool.
	MaxDatabaseConnections int `json:"max_database_connections"`
	// TLS is the server certificate, also presented as client certificate towards
	// reps and the auctioneer, and the CA that client certificates must chain to.
	TLS tlsconfig.Files `json:"tls"`
	// EncryptionKeys maps key labels to passphrases for data encrypted at rest.
	EncryptionKeys map[string]string `json:"encryption_keys"`
	// ActiveKeyLabel names the key new data is encrypted with.
	ActiveKeyLabel string `json:"active_key_label"`
	// AuctioneerAddress is the auctioneer's gRPC address; empty means none.
	AuctioneerAddress string `json:"auctioneer_address,omitempty"`
	// EventRetention is how long events stay available to resuming subscribers.
	EventRetention libconfig.Duration `json:"event_retention"`
	// EventRetentionCount is how many newest events are kept regardless of age.
	EventRetentionCount int `json:"event_retention_count"`
	// MaxRequestBodyBytes caps HTTP request bodies.
	MaxRequestBodyBytes int64 `json:"max_request_body_bytes"`
	// MaxSubscribersPerIdentity caps the event streams (gRPC and SSE together) that one
	// client certificate's common name holds open at once; more are refused
	// (RESOURCE_EXHAUSTED, HTTP 429).
	MaxSubscribersPerIdentity int `json:"max_subscribers_per_identity"`
	// EventWriteTimeout bounds the sending of one event to a subscriber; one that does
	// not take it in time is disconnected and resumes after the last event it got.
	EventWriteTimeout libconfig.Duration `json:"event_write_timeout"`
	// CellIdentityPrefix marks a rep's client certificate: its common name is this
	// prefix and a non-empty cell id. Such a caller may only read and act for its own
	// cell (docs/architecture.md "Authorisation"). Required.
	CellIdentityPrefix string `json:"cell_identity_prefix"`
	// IdentityCommonNames maps the common names of the other client certificates to
	// their roles (operator, bbs, auctioneer, converger, route-emitter); when set it
	// replaces the default (authz.DefaultCommonNames: the dev stack's names). A
	// certificate whose common name has no role is refused.
	IdentityCommonNames map[string]string `json:"identity_common_names,omitempty"`
	// MaxTaskRetries is how many rejections a task survives.
	MaxTaskRetries int `json:"max_task_retries"`
	// TaskCallbackTimeout bounds each POST to a task's completion_callback_url; a
	// timed-out attempt is retried (3 attempts in all).
	TaskCallbackTimeout libconfig.Duration `json:"task_callback_timeout"`
	// LogLevel is "debug", "info", "warn" or "error".
	LogLevel string `json:"log_level"`
}

// Default returns a configuration with every default set and no required field.
func Default() Config {
	return Config{
		GRPCAddress:               DefaultGRPCAddress,
		HTTPAddress:               DefaultHTTPAddress,
		DebugAddress:              DefaultDebugAddress,
		MaxDatabaseConnections:    DefaultMaxDatabaseConnections,
		EventRetention:            libconfig.Duration(DefaultEventRetention),
		EventRetentionCount:       DefaultEventRetentionCount,
		MaxRequestBodyBytes:       DefaultMaxRequestBodyBytes,
		MaxSubscribersPerIdentity: DefaultMaxSubscribersPerIdentity,
		EventWriteTimeout:         libconfig.Duration(DefaultEventWriteTimeout),
		CellIdentityPrefix:        DefaultCellIdentityPrefix,
		MaxTaskRetries:            DefaultMaxTaskRetries,
		TaskCallbackTimeout:       libconfig.Duration(DefaultTaskCallbackTimeout),
		LogLevel:                  DefaultLogLevel,
	}
}

// Load reads and validates the configuration file at path over the defaults.
func Load(path string) (*Config, error) {
	return libconfig.LoadOver(path, Default())
}

// Validate reports every invalid field, each error naming its field.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("nil config")
	}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	check(libconfig.Address("grpc_address", c.GRPCAddress))
	check(libconfig.Address("http_address", c.HTTPAddress))
	check(libconfig.DebugServer(c.DebugAddress, c.DebugAdminAddress))
	if c.AuctioneerAddress != "" {
		check(libconfig.Address("auctioneer_address", c.AuctioneerAddress))
	}
	if strings.TrimSpace(c.DatabaseURL) == "" {
		check(libconfig.Invalid("database_url", "is required"))
	}
	check(c.validDatabasePassword())
	if c.MaxDatabaseConnections <= 0 || c.MaxDatabaseConnections > 1<<15 {
		check(libconfig.Invalid("max_database_connections", "must be between 1 and 32768, got %d", c.MaxDatabaseConnections))
	}
	check(validTLS(c.TLS))
	if _, err := c.Names(); err != nil {
		check(err)
	}
	check(c.validKeys())
	if c.EventRetention <= 0 {
		check(libconfig.Invalid("event_retention", "must be positive, got %s", c.EventRetention))
	}
	if c.EventRetentionCount <= 0 {
		check(libconfig.Invalid("event_retention_count", "must be positive, got %d", c.EventRetentionCount))
	}
	if c.MaxRequestBodyBytes <= 0 {
		check(libconfig.Invalid("max_request_body_bytes", "must be positive, got %d", c.MaxRequestBodyBytes))
	}
	if c.MaxSubscribersPerIdentity <= 0 || c.MaxSubscribersPerIdentity > MaxMaxSubscribersPerIdentity {
		check(libconfig.Invalid("max_subscribers_per_identity", "must be between 1 and %d, got %d",
			MaxMaxSubscribersPerIdentity, c.MaxSubscribersPerIdentity))
	}
	if c.EventWriteTimeout <= 0 {
		check(libconfig.Invalid("event_write_timeout", "must be positive, got %s", c.EventWriteTimeout))
	}
	if c.TaskCallbackTimeout <= 0 {
		check(libconfig.Invalid("task_callback_timeout", "must be positive, got %s", c.TaskCallbackTimeout))
	}
	if c.MaxTaskRetries < 0 {
		check(libconfig.Invalid("max_task_retries", "must not be negative, got %d", c.MaxTaskRetries))
	}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		check(libconfig.Invalid("log_level", "%v", err))
	}
	return errors.Join(errs...)
}

func validTLS(files tlsconfig.Files) error {
	var errs []error
	for _, f := range []struct{ name, value string }{
		{"tls.ca_file", files.CAFile},
		{"tls.cert_file", files.CertFile},
		{"tls.key_file", files.KeyFile},
	} {
		if f.value == "" {
			errs = append(errs, libconfig.Invalid(f.name, "is required (mTLS is always on)"))
		}
	}
	return errors.Join(errs...)
}

// Names are the certificate names the BBS authorises by.
func (c *Config) Names() (authz.Names, error) {
	return authz.NewNames("identity_common_names", c.CellIdentityPrefix, c.IdentityCommonNames)
}

func (c *Config) validKeys() error {
	if len(c.EncryptionKeys) == 0 {
		return libconfig.Invalid("encryption_keys", "needs at least one label and passphrase")
	}
	var errs []error
	for _, label := range c.keyLabels() {
		switch {
		case label == "":
			errs = append(errs, libconfig.Invalid("encryption_keys", "a label is empty"))
		case len(label) > MaxKeyLabelLength:
			errs = append(errs, libconfig.Invalid("encryption_keys", "label %.20q... is longer than %d characters", label, MaxKeyLabelLength))
		case strings.Contains(label, ":"):
			errs = append(errs, libconfig.Invalid("encryption_keys", "label %q must not contain ':'", label))
		case c.EncryptionKeys[label] == "":
			errs = append(errs, libconfig.Invalid("encryption_keys", "label %q has an empty passphrase", label))
		}
	}
	if c.ActiveKeyLabel == "" {
		errs = append(errs, libconfig.Invalid("active_key_label", "is required"))
	} else if _, ok := c.EncryptionKeys[c.ActiveKeyLabel]; !ok {
		errs = append(errs, libconfig.Invalid("active_key_label", "%q is not a label of encryption_keys", c.ActiveKeyLabel))
	}
	return errors.Join(errs...)
}

func (c *Config) keyLabels() []string {
	labels := make([]string, 0, len(c.EncryptionKeys))
	for label := range c.EncryptionKeys {
		labels = append(labels, label)
	}
	sort.Strings(labels)
	return labels
}

// LogValue renders the effective configuration for the start-up log line with secrets
// redacted: the database password and the encryption passphrases.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("grpc_address", c.GRPCAddress),
		slog.String("http_address", c.HTTPAddress),
		slog.String("debug_address", c.DebugAddress),
		slog.String("debug_admin_address", c.DebugAdminAddress),
		slog.String("database_url", libconfig.RedactURL(c.DatabaseURL)),
		slog.String("database_password_file", c.DatabasePasswordFile),
		slog.Int("max_database_connections", c.MaxDatabaseConnections),
		slog.String("tls_ca_file", c.TLS.CAFile),
		slog.String("tls_cert_file", c.TLS.CertFile),
		slog.Any("encryption_key_labels", c.keyLabels()),
		slog.String("active_key_label", c.ActiveKeyLabel),
		slog.String("auctioneer_address", c.AuctioneerAddress),
		slog.String("event_retention", c.EventRetention.String()),
		slog.Int("event_retention_count", c.EventRetentionCount),
		slog.Int64("max_request_body_bytes", c.MaxRequestBodyBytes),
		slog.Int("max_subscribers_per_identity", c.MaxSubscribersPerIdentity),
		slog.String("event_write_timeout", c.EventWriteTimeout.String()),
		slog.Int("max_task_retries", c.MaxTaskRetries),
		slog.String("cell_identity_prefix", c.CellIdentityPrefix),
		slog.Any("identity_common_names", c.IdentityCommonNames),
		slog.String("log_level", c.LogLevel),
	)
}
