package containerd

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"drover.dev/executor"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/snapshots"
	"github.com/stretchr/testify/require"
)

// hostOwner is the host uid and gid of the file at p.
func hostOwner(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	info, err := os.Lstat(p)
	require.NoError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// initRoot is the host path of the root of guid's container (through its init).
func initRoot(t *testing.T, r *Runtime, guid string) string {
	t.Helper()
	_, task, err := r.loadTask(r.nsCtx(context.Background()), guid)
	require.NoError(t, err)
	return filepath.Join("/proc", strconv.Itoa(int(task.Pid())), "root")
}

func TestUnprivilegedContainerRunsInAUserNamespace(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	shared := t.TempDir()
	require.NoError(t, os.Chmod(shared, 0o755))
	spec := busyboxSpec(t)
	spec.BindMounts = []executor.BindMount{{Source: shared, Destination: "/shared"}}
	start := time.Now()
	create(t, r, spec)
	t.Logf("first unprivileged busybox container (with the remapped snapshot) created in %s", time.Since(start))

	exit, out, stderr := run(t, r, spec.Guid, "", "id -u; cat /proc/self/uid_map; cat /proc/self/gid_map; touch /made-by-root; ls -ld /sys/class/net")
	require.Equal(t, 0, exit.Code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, "0", lines[0])
	require.Equal(t, []string{"0", "1000000", "65536"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"0", "1100000", "65536"}, strings.Fields(lines[2]))

	uid, gid := hostOwner(t, filepath.Join(initRoot(t, r, spec.Guid), "made-by-root"))
	require.Equal(t, uint32(testHostUID), uid)
	require.Equal(t, uint32(testHostGID), gid)

	exit, _, stderr = run(t, r, spec.Guid, "", "touch /shared/nope")
	require.NotEqual(t, 0, exit.Code, "root inside wrote a host-root-owned bind mount")
	require.Contains(t, stderr, "Permission denied")
	_, err := os.Stat(filepath.Join(shared, "nope"))
	require.True(t, os.IsNotExist(err))

	// vcap (uid 2000 in the stack) is host uid+2000, in the container and for downloads.
	exit, _, stderr = run(t, r, spec.Guid, "vcap", "touch /home/vcap/made-by-vcap")
	require.Equal(t, 0, exit.Code, stderr)
	uid, _ = hostOwner(t, filepath.Join(initRoot(t, r, spec.Guid), "home/vcap/made-by-vcap"))
	require.Equal(t, uint32(testHostUID+2000), uid)
	require.NoError(t, r.StreamIn(context.Background(), spec.Guid, "/home/vcap/app", "vcap", tarOf(t, map[string]string{"f.txt": "x"})))
	uid, _ = hostOwner(t, filepath.Join(initRoot(t, r, spec.Guid), "home/vcap/app/f.txt"))
	require.Equal(t, uint32(testHostUID+2000), uid)
	exit, out, stderr = run(t, r, spec.Guid, "", "stat -c '%u:%g' /home/vcap/app/f.txt")
	require.Equal(t, 0, exit.Code, stderr)
	require.Equal(t, "2000:2000", strings.TrimSpace(out))

	rc, err := r.StreamOut(context.Background(), spec.Guid, "/home/vcap/app/f.txt")
	require.NoError(t, err)
	defer rc.Close()
	hdr, err := tar.NewReader(rc).Next()
	require.NoError(t, err)
	require.Equal(t, 2000, hdr.Uid, "stream out gives container ids")

	// setuid bits of the image survive the remap (busybox has none; check the rootfs owner).
	exit, out, stderr = run(t, r, spec.Guid, "", "stat -c '%u:%g' / /bin /etc/passwd")
	require.Equal(t, 0, exit.Code, stderr)
	require.Equal(t, "0:0\n0:0\n0:0\n", out)
}

func TestPrivilegedContainerIsHostRoot(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	shared := t.TempDir()
	require.NoError(t, os.Chmod(shared, 0o755))
	spec := busyboxSpec(t)
	spec.Privileged = true
	spec.BindMounts = []executor.BindMount{{Source: shared, Destination: "/shared"}}
	start := time.Now()
	create(t, r, spec)
	t.Logf("first privileged busybox container created in %s", time.Since(start))
	exit, out, stderr := run(t, r, spec.Guid, "", "id -u; cat /proc/self/uid_map; touch /shared/yes")
	require.Equal(t, 0, exit.Code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, "0", lines[0])
	require.Equal(t, []string{"0", "0", "4294967295"}, strings.Fields(lines[1]))
	uid, _ := hostOwner(t, filepath.Join(shared, "yes"))
	require.Equal(t, uint32(0), uid)
}

// remappedSnapshots lists the remapped snapshots of the runtime's namespace.
func remappedSnapshots(t *testing.T, r *Runtime) map[string]snapshots.Info {
	t.Helper()
	out := map[string]snapshots.Info{}
	err := r.client.SnapshotService(r.cfg.Snapshotter).Walk(r.nsCtx(context.Background()), func(_ context.Context, info snapshots.Info) error {
		out[info.Name] = info
		return nil
	}, fmt.Sprintf("labels.%q", remapOfLabel))
	require.NoError(t, err)
	return out
}

// snapshotParent is the parent of guid's container snapshot.
func snapshotParent(t *testing.T, r *Runtime, guid string) string {
	t.Helper()
	info, err := r.client.SnapshotService(r.cfg.Snapshotter).Stat(r.nsCtx(context.Background()), guid)
	require.NoError(t, err)
	return info.Parent
}

func TestContainersOfOneImageShareOneRemappedSnapshot(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	specs := []executor.ContainerSpec{busyboxSpec(t), busyboxSpec(t), busyboxSpec(t)}
	var wg sync.WaitGroup
	errs := make([]error, len(specs))
	for i := range specs {
		wg.Go(func() { _, errs[i] = r.Create(context.Background(), specs[i]) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	remaps := remappedSnapshots(t, r)
	require.Len(t, remaps, 1, "one remapped snapshot for the image")
	var key string
	for k, info := range remaps {
		key = k
		require.Equal(t, snapshots.KindCommitted, info.Kind)
		require.NotEmpty(t, info.Labels[gcRootLabel])
	}
	for _, s := range specs {
		require.Equal(t, key, snapshotParent(t, r, s.Guid))
	}
	// No prepare snapshot is left over.
	err := r.client.SnapshotService(r.cfg.Snapshotter).Walk(r.nsCtx(context.Background()), func(_ context.Context, info snapshots.Info) error {
		require.NotContains(t, info.Name, "-prepare-")
		return nil
	})
	require.NoError(t, err)

	// A privileged container is on the image itself.
	priv := busyboxSpec(t)
	priv.Privileged = true
	create(t, r, priv)
	require.NotEqual(t, key, snapshotParent(t, r, priv.Guid))
	require.Len(t, remappedSnapshots(t, r), 1)

	// The remapped snapshot is reused by the next container (and survives their deletion).
	for _, s := range specs {
		require.NoError(t, r.Destroy(context.Background(), s.Guid))
	}
	again := busyboxSpec(t)
	create(t, r, again)
	require.Equal(t, key, snapshotParent(t, r, again.Guid))
	exit, out, stderr := run(t, r, again.Guid, "vcap", "id -u; stat -c %u /home/vcap")
	require.Equal(t, 0, exit.Code, stderr)
	require.Equal(t, "2000\n2000\n", out)
}

func TestImageGCRemovesTheRemappedSnapshot(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	cfg := registryTestConfig(t, reg)
	r := newTestRuntime(t, cfg)
	repo := "drover/remap-" + randHex(t, 4)
	reg.push(repo, "v1", testImage(t, "remap"))
	spec := dockerSpec(t, "docker://"+reg.Host+"/"+repo+"#v1")
	create(t, r, spec)
	exit, out, stderr := run(t, r, spec.Guid, "root", "id -u; cat /marker")
	require.Equal(t, 0, exit.Code, stderr)
	require.Equal(t, "0\nremap\n", out)
	pre := busyboxSpec(t)
	create(t, r, pre)
	require.Len(t, remappedSnapshots(t, r), 2)
	preKey := snapshotParent(t, r, pre.Guid)

	require.NoError(t, r.Destroy(context.Background(), spec.Guid))
	require.Eventually(t, func() bool {
		remaps := remappedSnapshots(t, r)
		_, kept := remaps[preKey]
		return len(remaps) == 1 && kept
	}, 60*time.Second, 100*time.Millisecond, "the collected image's remapped snapshot is removed, the preloaded one's kept")
}

func TestPurgeRemovesUserNamespaceContainersAndRemappedSnapshots(t *testing.T) {
	cfg := testConfig(t)
	r, err := New(context.Background(), cfg, nil)
	require.NoError(t, err)
	a, b := busyboxSpec(t), busyboxSpec(t)
	create(t, r, a)
	create(t, r, b)
	require.NoError(t, r.Close())
	// What Destroy would have done for the network (the purge leaves it to RemoveCell).
	ctx := context.Background()
	for _, s := range []executor.ContainerSpec{a, b} {
		require.NoError(t, r.net.Teardown(ctx, s.Guid))
		require.NoError(t, r.fw.Remove(s.Guid))
	}

	require.NoError(t, PurgeNamespace(ctx, cfg.Socket, cfg.Namespace))
	client, err := containerd.New(cfg.Socket)
	require.NoError(t, err)
	defer client.Close()
	known, err := client.NamespaceService().List(ctx)
	require.NoError(t, err)
	if slices.Contains(known, cfg.Namespace) {
		// Tolerated: snapshots containerd refused to remove "with child" (logged).
		var left []string
		nsCtx := namespaces.WithNamespace(ctx, cfg.Namespace)
		require.NoError(t, client.SnapshotService(DefaultSnapshotter).Walk(nsCtx, func(_ context.Context, info snapshots.Info) error {
			left = append(left, info.Name)
			return nil
		}))
		t.Logf("purge left the namespace with snapshots %v", left)
		ctrs, err := client.Containers(nsCtx)
		require.NoError(t, err)
		require.Empty(t, ctrs)
	}
}

// TestUserNamespaceOfAContainerSurvivesARestartWithTheSettingChanged: a container keeps
// the mapping it was made with (stream-in ownership after a restart), while new
// containers follow the new setting.
func TestUserNamespaceOfAContainerSurvivesARestartWithTheSettingChanged(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	create(t, r, spec)
	require.NoError(t, r.Close())

	off := cfg
	off.UserNamespace = nil
	r2 := newTestRuntime(t, off)
	require.NoError(t, r2.StreamIn(context.Background(), spec.Guid, "/home/vcap/after", "vcap", tarOf(t, map[string]string{"f": "x"})))
	uid, _ := hostOwner(t, filepath.Join(initRoot(t, r2, spec.Guid), "home/vcap/after/f"))
	require.Equal(t, uint32(testHostUID+2000), uid)
	exit, out, stderr := run(t, r2, spec.Guid, "vcap", "id -u; stat -c %u /home/vcap/after/f; touch /home/vcap/after/g")
	require.Equal(t, 0, exit.Code, stderr)
	require.Equal(t, "2000\n2000\n", out)

	plain := busyboxSpec(t)
	create(t, r2, plain)
	exit, out, stderr = run(t, r2, plain.Guid, "", "cat /proc/self/uid_map")
	require.Equal(t, 0, exit.Code, stderr)
	require.Equal(t, []string{"0", "0", "4294967295"}, strings.Fields(out))
}
