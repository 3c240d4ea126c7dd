package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/bbs/bbstest"
	"drover.dev/bbs/client"
	"drover.dev/lib/proctest"
	"drover.dev/lib/tlsconfig"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// realBBS starts the bbs binary on a fresh database (Postgres from scripts/postgres.sh
// start) with dev certificates, and returns a client of it and the client certificate.
func realBBS(t *testing.T) (*client.Client, string, tlsconfig.Files) {
	t.Helper()
	certs := bbstest.NewCerts(t)
	addr := proctest.ReserveAddress(t)
	return bbstest.Start(t, filepath.Join(binDir, "bbs"), addr, certs), addr, certs("client")
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
