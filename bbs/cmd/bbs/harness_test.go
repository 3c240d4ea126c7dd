package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"drover.dev/bbs/config"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/proctest"
	"drover.dev/lib/tlsconfig"
)

// binDir holds the bbs binary TestMain builds.
var binDir string

func TestMain(m *testing.M) {
	proctest.BuildAndRun(m, &binDir, map[string]string{".": "bbs"})
}

// certSet is a dev CA with its BBS and client certificates in a directory.
type certSet struct{ dir string }

func newCertSet(t *testing.T) certSet {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	return certSet{dir: dir}
}

func (c certSet) path(name string) string { return filepath.Join(c.dir, name) }

// server is the tls block of a BBS configuration.
func (c certSet) server() tlsconfig.Files {
	return tlsconfig.Files{CAFile: c.path("ca.crt"), CertFile: c.path("bbs.crt"), KeyFile: c.path("bbs.key")}
}

// client is a TLS configuration presenting the client certificate.
func (c certSet) client(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := tlsconfig.Files{CAFile: c.path("ca.crt"), CertFile: c.path("client.crt"), KeyFile: c.path("client.key")}.Client()
	require.NoError(t, err)
	return cfg
}

// cell is a TLS configuration presenting a rep's certificate for cellID (common name
// "cell:" + cellID, issued by the set's CA).
func (c certSet) cell(t *testing.T, cellID string) *tls.Config {
	t.Helper()
	ca, err := devcerts.LoadOrCreateCA(c.dir)
	require.NoError(t, err)
	name := "rep-" + cellID
	require.NoError(t, devcerts.EnsureCert(ca, c.dir, name, config.DefaultCellIdentityPrefix+cellID, []string{"127.0.0.1"}))
	cfg, err := tlsconfig.Files{CAFile: c.path("ca.crt"), CertFile: c.path(name + ".crt"), KeyFile: c.path(name + ".key")}.Client()
	require.NoError(t, err)
	return cfg
}

// testConfig is a complete BBS configuration on free ports.
func testConfig(t *testing.T, databaseURL string, certs certSet) map[string]any {
	return map[string]any{
		"grpc_address":     proctest.ReserveAddress(t),
		"http_address":     proctest.ReserveAddress(t),
		"debug_address":    proctest.ReserveAddress(t),
		"database_url":     databaseURL,
		"tls":              certs.server(),
		"encryption_keys":  map[string]string{"k1": "a passphrase for tests"},
		"active_key_label": "k1",
		"log_level":        "debug",
	}
}

func writeConfig(t *testing.T, cfg any) string { return proctest.WriteJSON(t, "bbs.json", cfg) }

// bbsProcess is a running bbs binary.
type bbsProcess struct{ *proctest.Process }

// startBBS runs the binary with args; the process is killed at cleanup if still running.
func startBBS(t *testing.T, args ...string) *bbsProcess {
	t.Helper()
	return &bbsProcess{proctest.Start(t, "bbs", filepath.Join(binDir, "bbs"), args...)}
}

// logMessages returns the "msg" of every JSON log line the process wrote.
func (p *bbsProcess) logMessages() []string {
	var messages []string
	for _, line := range bytes.Split([]byte(p.Output()), []byte("\n")) {
		var record struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(line, &record) == nil && record.Msg != "" {
			messages = append(messages, record.Msg)
		}
	}
	return messages
}

// dial connects to a gRPC address with the given client TLS configuration.
func dial(t *testing.T, addr string, tlsConfig *tls.Config) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig)))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// waitServing polls the overall health status until SERVING, failing early if the
// process exits.
func (p *bbsProcess) waitServing(t *testing.T, conn *grpc.ClientConn, timeout time.Duration) {
	t.Helper()
	health := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		select {
		case <-p.Exited():
			t.Fatalf("bbs exited before serving: %v", p.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("bbs not SERVING after %s (last: %v, %v)", timeout, resp.GetStatus(), err)
		}
	}
}

// httpsClient is an HTTP client with the given TLS configuration.
func httpsClient(tlsConfig *tls.Config) *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true},
	}
}
