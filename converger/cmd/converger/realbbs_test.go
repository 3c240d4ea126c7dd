package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"drover.dev/bbs/client"
	"drover.dev/bbs/store/storetest"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/proctest"
	"drover.dev/lib/tlsconfig"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// realBBS starts the bbs binary on a fresh database (Postgres from scripts/postgres.sh
// start) with dev certificates, and returns a client of it and the client certificate.
func realBBS(t *testing.T) (*client.Client, string, tlsconfig.Files) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	files := func(name string) tlsconfig.Files {
		return tlsconfig.Files{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	}
	addr := proctest.FreeAddress(t)
	p := proctest.Start(t, "bbs", filepath.Join(binDir, "bbs"), "-config", proctest.WriteJSON(t, "bbs.json", map[string]any{
		"grpc_address":     addr,
		"http_address":     proctest.FreeAddress(t),
		"debug_address":    proctest.FreeAddress(t),
		"database_url":     storetest.NewDatabase(t),
		"tls":              files("bbs"),
		"encryption_keys":  map[string]string{"k1": "a passphrase for tests"},
		"active_key_label": "k1",
		"log_level":        "debug",
	}))
	clientTLS, err := files("client").Client()
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
	}, waitTimeout, pollEvery, "bbs SERVING")
	return c, addr, files("client")
}

// TestConvergerAgainstARealBBS: two UNCLAIMED instances nobody places go stale, the
// converger re-auctions them, and the BBS records the pass and the lock owner.
func TestConvergerAgainstARealBBS(t *testing.T) {
	bbs, addr, certs := realBBS(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := bbs.UpsertDomain(ctx, &bbsv1.UpsertDomainRequest{Domain: "cf-apps", TtlSeconds: 3600})
	require.NoError(t, err)
	_, err = bbs.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: &modelsv1.DesiredLRP{
		ProcessGuid: "web", Domain: "cf-apps", Instances: 2, Rootfs: "preloaded:busybox", MemoryMb: 32, DiskMb: 32,
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "root"}}},
	}})
	require.NoError(t, err)

	cfg := convergerConfig(t, addr, "converger-real")
	cfg["tls"] = certs
	cfg["stale_unclaimed_duration"] = "1ms"
	p := startConverger(t, cfg)

	var status *bbsv1.GetConvergerStatusResponse
	require.Eventually(t, func() bool {
		status, err = bbs.GetConvergerStatus(ctx, &bbsv1.GetConvergerStatusRequest{})
		return err == nil && status.GetLastPass() != nil
	}, waitTimeout, pollEvery, "a pass is reported (last error: %v)\n%s", err, p.Output())
	pass := status.GetLastPass()
	assert.Equal(t, "converger-real", pass.GetOwner())
	assert.Equal(t, "converger-real", status.GetLockOwner())
	assert.Equal(t, int32(1), pass.GetDesiredLrps())
	assert.Equal(t, int32(2), pass.GetActualLrps())
	assert.Equal(t, int32(2), pass.GetStaleUnclaimed())
	assert.Equal(t, int32(2), pass.GetActionsApplied())
	assert.Equal(t, []string{"cf-apps"}, pass.GetFreshDomains())
	assert.Empty(t, pass.GetError())
	assert.Contains(t, p.Output(), `"kind":"unclaim-stale"`)
}
