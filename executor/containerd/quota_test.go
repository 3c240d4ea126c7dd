package containerd

import (
	"context"
	"testing"
	"time"

	"drover.dev/executor"
	"drover.dev/lib/testenv"
	"github.com/stretchr/testify/require"
)

// diskQuotaEnforced reports whether the filesystem enforces guid's disk_mb.
func diskQuotaEnforced(t *testing.T, r *Runtime, guid string) bool {
	t.Helper()
	meta, ok, err := r.state.readContainerMeta(guid)
	require.NoError(t, err)
	require.True(t, ok)
	return meta.DiskQuota
}

func TestDiskQuotaRefusesWrites(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	spec.Resource.DiskMB = 20
	create(t, r, spec)
	if !diskQuotaEnforced(t, r, spec.Guid) {
		testenv.Missing(t, "btrfs with quotas under containerd's root", "start containerd with scripts/containerd.sh (DROVER_CONTAINERD_FS=btrfs, the default) and btrfs-progs installed")
	}
	main, err := r.Exec(context.Background(), spec.Guid, executor.ProcessSpec{ID: "main", Path: "/bin/sleep", Args: []string{"3600"}})
	require.NoError(t, err)

	exit, _, stderr := run(t, r, spec.Guid, "", "dd if=/dev/zero of=/tmp/big bs=1M count=60")
	require.Equal(t, 1, exit.Code, "dd fails: %s", stderr)
	require.Contains(t, stderr, "Disk quota exceeded")
	// The container lives on: its processes run, new ones start, freed space is usable.
	exit, out, stderr := run(t, r, spec.Guid, "", "rm /tmp/big && dd if=/dev/zero of=/tmp/small bs=1M count=5 2>/dev/null && echo wrote")
	require.Equal(t, executor.ProcessExit{}, exit, stderr)
	require.Equal(t, "wrote\n", out)
	// Fill it up again: usage reporting stays, and the disk poll that measures the full
	// layer stops nothing.
	exit, _, _ = run(t, r, spec.Guid, "", "exec dd if=/dev/zero of=/tmp/big bs=1M count=60")
	require.Equal(t, 1, exit.Code)
	require.Eventually(t, func() bool {
		u, err := r.Usage(context.Background(), spec.Guid)
		return err == nil && u.DiskBytes >= 19<<20
	}, time.Minute, 50*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 3*cfg.DiskPollInterval)
	defer cancel()
	_, err = main.Wait(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the main process still runs")
	require.True(t, listed(t, r, spec.Guid).Alive)
}

func TestDiskZeroIsUnlimited(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	spec.Resource.DiskMB = 0
	create(t, r, spec)
	require.False(t, diskQuotaEnforced(t, r, spec.Guid))
	exit, out, stderr := run(t, r, spec.Guid, "", "dd if=/dev/zero of=/tmp/big bs=1M count=60 2>/dev/null && echo wrote")
	require.Equal(t, executor.ProcessExit{}, exit, stderr)
	require.Equal(t, "wrote\n", out)
}
