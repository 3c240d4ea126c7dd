package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	libconfig "drover.dev/lib/config"
)

// minimal is the smallest valid configuration file: only the required fields.
const minimal = `{
  "database_url": "postgres://drover:s3cret@127.0.0.1:54329/drover?sslmode=disable",
  "tls": {"ca_file": "/certs/ca.crt", "cert_file": "/certs/bbs.crt", "key_file": "/certs/bbs.key"},
  "encryption_keys": {"k1": "passphrase-one"},
  "active_key_label": "k1"
}`

func write(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bbs.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// withField returns the minimal configuration with one top-level field set or, when
// value is nil, removed.
func withField(t *testing.T, field string, value any) string {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(minimal), &doc))
	if value == nil {
		delete(doc, field)
	} else {
		doc[field] = value
	}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return string(out)
}

func TestDefaults(t *testing.T) {
	cfg, err := Load(write(t, minimal))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8889", cfg.GRPCAddress)
	require.Equal(t, "127.0.0.1:8888", cfg.HTTPAddress)
	require.Equal(t, "127.0.0.1:8890", cfg.DebugAddress)
	require.Equal(t, 50, cfg.MaxDatabaseConnections)
	require.Equal(t, "", cfg.AuctioneerAddress)
	require.Equal(t, 24*time.Hour, cfg.EventRetention.Duration())
	require.Equal(t, 100000, cfg.EventRetentionCount)
	require.Equal(t, int64(1048576), cfg.MaxRequestBodyBytes)
	require.Equal(t, 64, cfg.MaxSubscribersPerIdentity)
	require.Equal(t, 30*time.Second, cfg.EventWriteTimeout.Duration())
	require.Equal(t, 3, cfg.MaxTaskRetries)
	require.Equal(t, 20*time.Second, cfg.TaskCallbackTimeout.Duration())
	require.Equal(t, "info", cfg.LogLevel)
	require.Equal(t, "/certs/bbs.crt", cfg.TLS.CertFile)
	require.Equal(t, map[string]string{"k1": "passphrase-one"}, cfg.EncryptionKeys)
}

func TestEveryFieldIsRead(t *testing.T) {
	cfg, err := Load(write(t, `{
	  "grpc_address": "0.0.0.0:9001", "http_address": "0.0.0.0:9002", "debug_address": "0.0.0.0:9003",
	  "debug_admin_address": "unix:/run/drover/bbs-debug.sock", "database_url": "postgres://x@db/drover", "max_database_connections": 7,
	  "tls": {"ca_file": "ca", "cert_file": "crt", "key_file": "key"},
	  "encryption_keys": {"old": "a", "new": "b"}, "active_key_label": "new",
	  "auctioneer_address": "auctioneer.service.drover.internal:9016",
	  "event_retention": "90m", "event_retention_count": 10, "max_request_body_bytes": 2048,
	  "max_subscribers_per_identity": 5, "event_write_timeout": "10s",
	  "max_task_retries": 0, "log_level": "debug", "cell_identity_prefix": "rep:",
	  "identity_common_names": {"alice": "operator", "bbs-1": "bbs"},
	  "task_callback_timeout": "2s"
	}`))
	require.NoError(t, err)
	require.Equal(t, Config{
		GRPCAddress: "0.0.0.0:9001", HTTPAddress: "0.0.0.0:9002", DebugAddress: "0.0.0.0:9003", DebugAdminAddress: "unix:/run/drover/bbs-debug.sock",
		DatabaseURL: "postgres://x@db/drover", MaxDatabaseConnections: 7,
		TLS:            cfg.TLS,
		EncryptionKeys: map[string]string{"old": "a", "new": "b"}, ActiveKeyLabel: "new",
		AuctioneerAddress: "auctioneer.service.drover.internal:9016",
		EventRetention:    cfg.EventRetention, EventRetentionCount: 10, MaxRequestBodyBytes: 2048,
		MaxSubscribersPerIdentity: 5, EventWriteTimeout: libconfig.Duration(10 * time.Second),
		MaxTaskRetries: 0, LogLevel: "debug", CellIdentityPrefix: "rep:",
		IdentityCommonNames: map[string]string{"alice": "operator", "bbs-1": "bbs"},
		TaskCallbackTimeout: cfg.TaskCallbackTimeout,
	}, *cfg)
	require.Equal(t, 2*time.Second, cfg.TaskCallbackTimeout.Duration())
	require.Equal(t, 90*time.Minute, cfg.EventRetention.Duration())
	require.Equal(t, "key", cfg.TLS.KeyFile)
}

func TestValidationErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name    string
		content string
		field   string
	}{
		{name: "zero task_callback_timeout", content: withField(t, "task_callback_timeout", "0s"), field: "task_callback_timeout"},
		{name: "missing database_url", content: withField(t, "database_url", nil), field: "database_url"},
		{name: "blank database_url", content: withField(t, "database_url", "  "), field: "database_url"},
		{name: "missing tls", content: withField(t, "tls", nil), field: "tls.ca_file"},
		{name: "missing cert_file", content: withField(t, "tls", map[string]string{"ca_file": "a", "key_file": "k"}), field: "tls.cert_file"},
		{name: "missing key_file", content: withField(t, "tls", map[string]string{"ca_file": "a", "cert_file": "c"}), field: "tls.key_file"},
		{name: "unknown tls field", content: withField(t, "tls", map[string]string{"ca": "a"}), field: `"ca"`},
		{name: "no encryption keys", content: withField(t, "encryption_keys", map[string]string{}), field: "encryption_keys"},
		{name: "empty passphrase", content: withField(t, "encryption_keys", map[string]string{"k1": ""}), field: "encryption_keys"},
		{name: "label with colon", content: withField(t, "encryption_keys", map[string]string{"k1": "x", "a:b": "y"}), field: "encryption_keys"},
		{name: "missing active_key_label", content: withField(t, "active_key_label", nil), field: "active_key_label"},
		{name: "unknown active_key_label", content: withField(t, "active_key_label", "k9"), field: "active_key_label"},
		{name: "bad grpc_address", content: withField(t, "grpc_address", "8889"), field: "grpc_address"},
		{name: "empty http_address", content: withField(t, "http_address", ""), field: "http_address"},
		{name: "bad debug_address", content: withField(t, "debug_address", "localhost"), field: "debug_address"},
		{name: "routable debug_address with pprof on it", content: withField(t, "debug_address", "0.0.0.0:8890"), field: `debug_address: "0.0.0.0:8890" is not a loopback address`},
		{name: "routable debug_admin_address", content: withField(t, "debug_admin_address", "0.0.0.0:8891"), field: `debug_admin_address: "0.0.0.0:8891" is not a loopback address`},
		{name: "bad auctioneer_address", content: withField(t, "auctioneer_address", "auctioneer"), field: "auctioneer_address"},
		{name: "zero max_database_connections", content: withField(t, "max_database_connections", 0), field: "max_database_connections"},
		{name: "huge max_database_connections", content: withField(t, "max_database_connections", 1<<20), field: "max_database_connections"},
		{name: "zero event_retention", content: withField(t, "event_retention", "0s"), field: "event_retention"},
		{name: "unparsable event_retention", content: withField(t, "event_retention", "a day"), field: "event_retention"},
		{name: "zero event_retention_count", content: withField(t, "event_retention_count", 0), field: "event_retention_count"},
		{name: "zero max_request_body_bytes", content: withField(t, "max_request_body_bytes", 0), field: "max_request_body_bytes"},
		{name: "zero max_subscribers_per_identity", content: withField(t, "max_subscribers_per_identity", 0),
			field: "max_subscribers_per_identity: must be between 1 and 10000, got 0"},
		{name: "huge max_subscribers_per_identity", content: withField(t, "max_subscribers_per_identity", 10001),
			field: "max_subscribers_per_identity: must be between 1 and 10000, got 10001"},
		{name: "zero event_write_timeout", content: withField(t, "event_write_timeout", "0s"), field: "event_write_timeout: must be positive"},
		{name: "negative event_write_timeout", content: withField(t, "event_write_timeout", "-1s"), field: "event_write_timeout: must be positive"},
		{name: "unparsable event_write_timeout", content: withField(t, "event_write_timeout", "soon"), field: "event_write_timeout"},
		{name: "negative max_task_retries", content: withField(t, "max_task_retries", -1), field: "max_task_retries"},
		{name: "bad log_level", content: withField(t, "log_level", "loud"), field: "log_level"},
		{name: "wrong type", content: withField(t, "max_task_retries", "three"), field: "max_task_retries"},
		{name: "empty cell_identity_prefix", content: withField(t, "cell_identity_prefix", ""), field: "cell_identity_prefix: must not be empty"},
		{name: "unknown role", content: withField(t, "identity_common_names", map[string]string{"alice": "root"}),
			field: `identity_common_names: "alice" has role "root"`},
		{name: "common name with the cell prefix", content: withField(t, "identity_common_names", map[string]string{"cell:x": "operator"}),
			field: `identity_common_names: "cell:x" starts with the cell prefix "cell:"`},
		{name: "unknown field", content: withField(t, "grpc_port", 8889), field: `unknown field "grpc_port"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(write(t, tt.content))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.field)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := Default()
	err := cfg.Validate()
	require.Error(t, err)
	for _, field := range []string{"database_url", "tls.ca_file", "tls.cert_file", "tls.key_file", "encryption_keys"} {
		require.Contains(t, err.Error(), field)
	}
	var nilCfg *Config
	require.Error(t, nilCfg.Validate())
}

func TestLogValueRedactsSecrets(t *testing.T) {
	tests := []struct {
		name, url, hidden, shown string
	}{
		{name: "url password", url: "postgres://drover:s3cret@db:5432/drover", hidden: "s3cret", shown: "drover:xxxxx@db"},
		{name: "query password", url: "postgres://db/drover?password=s3cret&sslmode=disable", hidden: "s3cret", shown: "sslmode=disable"},
		{name: "keyword/value", url: "host=db password=s3cret", hidden: "s3cret", shown: "[redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			cfg.DatabaseURL = tt.url
			cfg.EncryptionKeys = map[string]string{"k1": "passphrase-one"}
			cfg.ActiveKeyLabel = "k1"
			var buf bytes.Buffer
			slog.New(slog.NewJSONHandler(&buf, nil)).Info("bbs-config", "config", cfg)
			require.NotContains(t, buf.String(), tt.hidden)
			require.NotContains(t, buf.String(), "passphrase-one")
			require.Contains(t, buf.String(), tt.shown)
			require.Contains(t, buf.String(), `"encryption_key_labels":["k1"]`)
		})
	}
}
