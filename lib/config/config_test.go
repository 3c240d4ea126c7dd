package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/tlsconfig"
)

type sample struct {
	Name    string   `json:"name"`
	Count   int      `json:"count"`
	Timeout Duration `json:"timeout"`
}

func (s *sample) Validate() error {
	if s.Name == "" {
		return Invalid("name", "is required")
	}
	return nil
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestLoadKeepsDefaultsAndReadsFields(t *testing.T) {
	cfg := &sample{Count: 7, Timeout: Duration(time.Minute)}
	require.NoError(t, Load(writeFile(t, `{"name": "bbs", "timeout": "30s"}`), cfg))
	require.Equal(t, "bbs", cfg.Name)
	require.Equal(t, 7, cfg.Count, "absent fields keep their defaults")
	require.Equal(t, 30*time.Second, cfg.Timeout.Duration())
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{name: "unknown field", content: `{"name": "x", "colour": "red"}`, want: []string{`unknown field "colour"`}},
		{name: "validation", content: `{"count": 1}`, want: []string{"invalid", "name: is required"}},
		{name: "wrong type", content: "{\"name\": \"x\",\n\"count\": \"many\"}", want: []string{"line 2", "count"}},
		{name: "bad duration", content: "{\"name\": \"x\",\n\n\"timeout\": \"soon\"}", want: []string{"line 3", `field "timeout"`, "soon"}},
		{name: "numeric duration", content: `{"name": "x", "timeout": 30}`, want: []string{`field "timeout"`, "must be a string"}},
		{name: "syntax", content: "{\"name\": \"x\",\n}", want: []string{"line 2", "invalid character"}},
		{name: "empty", content: "", want: []string{"empty file"}},
		{name: "trailing data", content: `{"name": "x"} {"name": "y"}`, want: []string{"after the JSON object"}},
		{name: "not an object", content: `[1, 2]`, want: []string{"cannot unmarshal array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			err := Load(path, &sample{})
			require.Error(t, err)
			require.Contains(t, err.Error(), path)
			for _, want := range tt.want {
				require.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestLoadMissingFileAndNilDestination(t *testing.T) {
	err := Load(filepath.Join(t.TempDir(), "absent.json"), &sample{})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Error(t, Load(writeFile(t, `{}`), nil))
}

func TestFieldError(t *testing.T) {
	err := Invalid("tls.ca_file", "file %s not found", "/x")
	require.EqualError(t, err, "tls.ca_file: file /x not found")
	var fe *FieldError
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "tls.ca_file", fe.Field)
}

func TestDurationJSONRoundTrip(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{in: `"30s"`, want: 30 * time.Second},
		{in: `"24h"`, want: 24 * time.Hour},
		{in: `"1m30s"`, want: 90 * time.Second},
		{in: `"250ms"`, want: 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var d Duration
			require.NoError(t, json.Unmarshal([]byte(tt.in), &d))
			require.Equal(t, tt.want, d.Duration())
			out, err := json.Marshal(d)
			require.NoError(t, err)
			var back Duration
			require.NoError(t, json.Unmarshal(out, &back))
			require.Equal(t, d, back)
			require.Equal(t, tt.want.String(), d.String())
		})
	}
}

func TestLoadOverKeepsTheDefaults(t *testing.T) {
	defaults := sample{Name: "default", Count: 7}
	cfg, err := LoadOver(writeFile(t, `{"name": "x"}`), defaults)
	require.NoError(t, err)
	require.Equal(t, "x", cfg.Name)
	require.Equal(t, 7, cfg.Count)
	require.Equal(t, "default", defaults.Name, "the defaults are not modified")
	_, err = LoadOver(writeFile(t, `{"nope": 1}`), defaults)
	require.Error(t, err)
}

func TestAddresses(t *testing.T) {
	errs := Addresses([][2]string{{"listen_address", "127.0.0.1:80"}, {"debug_address", ""}, {"bbs_address", "nohost"}})
	require.Len(t, errs, 2)
	require.EqualError(t, errs[0], "debug_address: is required")
	require.EqualError(t, errs[1], `bbs_address: must be host:port, got "nohost"`)
	require.Empty(t, Addresses([][2]string{{"a", "h:1"}}))
}

func TestOptionalTLS(t *testing.T) {
	require.NoError(t, OptionalTLS("tls", tlsconfig.Files{}), "no files: TLS off")
	require.NoError(t, OptionalTLS("tls", tlsconfig.Files{CAFile: "ca", CertFile: "crt", KeyFile: "key"}))
	require.EqualError(t, OptionalTLS("nats_tls", tlsconfig.Files{CAFile: "ca"}), "nats_tls: cert_file is required")
}
