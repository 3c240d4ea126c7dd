package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"drover.dev/devstack"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/testenv"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	repconfig "drover.dev/rep/config"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// TestOOMChildKillCrashesInstance: when the memory limit kills a child process while the
// instance's main process (httpd) keeps running, the instance still crashes, as on Garden,
// with a crash reason that says out of memory.
func TestOOMChildKillCrashesInstance(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	const guid = "child-memory-hog"
	lrp := httpdLRP(guid, 1)
	lrp.MemoryMb = 32
	// The background child (tail keeps its newline-free input in memory) is killed at the
	// limit; httpd, the main process, is not.
	lrp.Action = shAction(`(sleep 1; head -c 512m /dev/zero | tail) & ` + httpdScript)
	cs.desire(t, lrp)
	crashed := cs.waitActuals(t, guid, runningWait, "an out-of-memory crash", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 1 && as[0].GetCrashCount() >= 1
	})[0]
	require.Contains(t, crashed.GetCrashReason(), "out of memory: a process in the container was killed at the 32 MB memory limit",
		"crash reason %q", crashed.GetCrashReason())
	cs.removeAndWaitClean(t, guid)
}

// TestDiskQuotaRefusesWrites: a write past disk_mb fails inside the container with a
// disk-full error, the process that wrote lives on, and the instance stays RUNNING.
func TestDiskQuotaRefusesWrites(t *testing.T) {
	requireDiskQuotas(t)
	cs := newCellStack(t, 1, func(_ int, c *repconfig.Config) {
		c.Executor.DiskPollInterval = libconfig.Duration(200 * time.Millisecond)
	})
	const guid = "disk-filler"
	lrp := httpdLRP(guid, 1)
	lrp.DiskMb = 20
	// Once the page is written, the writer reports dd's outcome on the instance's page
	// (after freeing the space the report needs), then fills the disk again and stays
	// alive.
	lrp.Action = shAction(`mkdir -p /tmp/www && (
  until [ -s /tmp/www/index.html ]; do sleep 0.1; done
  out=$(dd if=/dev/zero of=/tmp/big bs=1M count=60 2>&1); rc=$?
  rm -f /tmp/big
  echo "rc=$rc $out" > /tmp/www/dd.txt
  dd if=/dev/zero of=/tmp/big bs=1M count=60 2>/dev/null
  exec sleep 3600) & ` + httpdScript)
	cs.desire(t, lrp)
	running := cs.waitRunning(t, guid, 1)[0]
	url := hostURL(t, running, httpPort)

	var report string
	require.Eventually(t, func() bool {
		body, err := httpGet(url + "dd.txt")
		report = body
		return err == nil
	}, runningWait, cellPoll, "no dd report at %s", url)
	require.Contains(t, report, "rc=1 ")
	require.Contains(t, report, "Disk quota exceeded")

	// Full again: once the rep's disk poll has measured the full layer, the instance
	// still runs, has never crashed and serves.
	tlsConf, err := cs.ClientTLS()
	require.NoError(t, err)
	conn, err := grpc.NewClient(cs.Reps[0].Address(), grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	require.NoError(t, err)
	defer conn.Close()
	rep := repv1.NewRepServiceClient(conn)
	var disk uint64
	require.Eventually(t, func() bool {
		resp, err := rep.ContainerMetrics(callCtx(t), &repv1.ContainerMetricsRequest{})
		if err != nil {
			return false
		}
		for _, m := range resp.GetMetrics() {
			if m.GetProcessGuid() == guid {
				disk = m.GetDiskBytes()
			}
		}
		return disk >= 18<<20
	}, runningWait, cellPoll, "disk use never measured full (last %d bytes)", disk)
	as := cs.actuals(t, guid)
	require.Len(t, as, 1)
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, as[0].GetState(), describeActuals(as))
	require.Zero(t, as[0].GetCrashCount(), describeActuals(as))
	requireServesIndex(t, running)
	cs.removeAndWaitClean(t, guid)
}

// requireDiskQuotas calls testenv.Missing unless the shared containerd keeps its root
// on btrfs (scripts/containerd.sh's default), where the filesystem enforces disk_mb.
func requireDiskQuotas(t *testing.T) {
	t.Helper()
	root, err := devstack.FindRoot()
	require.NoError(t, err)
	conf, err := os.ReadFile(filepath.Join(devstack.DefaultHome(root), "containerd", "config.toml"))
	if err != nil {
		testenv.Missing(t, "containerd", "start it with scripts/containerd.sh start: "+err.Error())
	}
	var ctrRoot string
	for _, line := range strings.Split(string(conf), "\n") {
		if v, ok := strings.CutPrefix(line, "root = "); ok {
			ctrRoot = strings.Trim(v, `"`)
		}
	}
	const btrfsMagic = 0x9123683e
	var st syscall.Statfs_t
	if ctrRoot == "" || syscall.Statfs(ctrRoot, &st) != nil || st.Type != btrfsMagic {
		testenv.Missing(t, "containerd's root on btrfs with quotas", "restart containerd with scripts/containerd.sh stop && scripts/containerd.sh start (DROVER_CONTAINERD_FS=btrfs, btrfs-progs installed)")
	}
}
