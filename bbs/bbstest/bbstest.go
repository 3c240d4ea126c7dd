// Package bbstest runs the real bbs binary for the tests of the components that talk to
// it (converger, route-emitter, ...): dev certificates and a BBS on a fresh database.
package bbstest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"drover.dev/bbs/client"
	"drover.dev/bbs/store/storetest"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/proctest"
	"drover.dev/lib/tlsconfig"
)

// Certs names the certificate pairs of a dev CA directory: Certs("bbs"), Certs("client"),
// and any extra pair NewCerts wrote.
type Certs func(name string) tlsconfig.Files

// NewCerts writes a dev CA with its bbs and client certificates (devcerts.WriteDevCerts)
// and, for each extra name, a certificate with that common name for 127.0.0.1.
func NewCerts(t testing.TB, extra ...string) Certs {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	ca, err := devcerts.LoadOrCreateCA(dir)
	require.NoError(t, err)
	for _, name := range extra {
		require.NoError(t, devcerts.EnsureCert(ca, dir, name, name, []string{"127.0.0.1"}))
	}
	return func(name string) tlsconfig.Files {
		return tlsconfig.Files{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	}
}

// StartTimeout bounds how long Start waits for the BBS to report SERVING.
const StartTimeout = 30 * time.Second

// Start runs the bbs binary with gRPC on addr, the certs' "bbs" pair and a fresh
// database (Postgres from scripts/postgres.sh), waits until it reports SERVING, and
// returns a client with the certs' "client" pair. The process is stopped at cleanup.
func Start(t testing.TB, binary, addr string, certs Certs) *client.Client {
	t.Helper()
	p := proctest.Start(t, "bbs", binary, "-config", proctest.WriteJSON(t, "bbs.json", map[string]any{
		"grpc_address":     addr,
		"http_address":     proctest.ReserveAddress(t),
		"debug_address":    proctest.ReserveAddress(t),
		"database_url":     storetest.NewDatabase(t),
		"tls":              certs("bbs"),
		"encryption_keys":  map[string]string{"k1": "a passphrase for tests"},
		"active_key_label": "k1",
		"log_level":        "debug",
	}))
	clientTLS, err := certs("client").Client()
	require.NoError(t, err)
	c, err := client.New(addr, clientTLS)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.Eventually(t, func() bool {
		select {
		case <-p.Exited():
			t.Fatalf("bbs exited: %v\n%s", p.Err(), p.Output())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := healthpb.NewHealthClient(c.Conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, StartTimeout, 50*time.Millisecond, "bbs SERVING on %s", addr)
	return c
}
