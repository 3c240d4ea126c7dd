package containerd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"drover.dev/executor"
	"drover.dev/executor/firewall"
	"drover.dev/executor/network"
	"drover.dev/executor/rootfs"
	"drover.dev/lib/testenv"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
)

// testSocket is the private containerd's socket; the test is skipped (testenv.Missing)
// when it does not run as root or containerd does not answer.
func testSocket(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t, "containerd runtime tests run containers")
	script, err := filepath.Abs("../../scripts/containerd.sh")
	require.NoError(t, err)
	out, err := exec.Command(script, "socket").Output()
	require.NoError(t, err, "scripts/containerd.sh socket")
	sock := strings.TrimSpace(string(out))
	c, err := containerd.New(sock, containerd.WithTimeout(2*time.Second))
	if err == nil {
		_, err = c.Version(context.Background())
		c.Close()
	}
	if err != nil {
		testenv.Missing(t, "containerd", fmt.Sprintf("it does not answer at %s (%v): start it with scripts/containerd.sh start", sock, err))
	}
	return sock
}

func randHex(t *testing.T, n int) string {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func randInt(t *testing.T, n int64) int {
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	require.NoError(t, err)
	return int(v.Int64())
}

var subnetMu sync.Mutex

// freeSubnet picks 10.201.N.0/24 that no host route overlaps.
func freeSubnet(t *testing.T) string {
	subnetMu.Lock()
	defer subnetMu.Unlock()
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	require.NoError(t, err)
	for range 100 {
		_, candidate, _ := net.ParseCIDR(fmt.Sprintf("10.201.%d.0/24", 1+randInt(t, 254)))
		taken := false
		for _, r := range routes {
			if r.Dst != nil && r.Dst.String() != "0.0.0.0/0" && (r.Dst.Contains(candidate.IP) || candidate.Contains(r.Dst.IP)) {
				taken = true
			}
		}
		if !taken {
			return candidate.String()
		}
	}
	t.Fatal("no free 10.201.N.0/24 subnet")
	return ""
}

// The host range of the tests' user namespaces.
const (
	testHostUID = 1_000_000
	testHostGID = 1_100_000
)

// testConfig is a config of a cell of its own: namespace, state dir, bridge, subnet,
// ports and the busybox image. Cleanups remove everything in the namespace (then the
// namespace) and the cell's network when the test ends.
func testConfig(t *testing.T) Config {
	t.Helper()
	sock := testSocket(t)
	id := randHex(t, 5)
	ns := "drover-test-" + id
	bridge := "dc" + id
	start := 30000 + randInt(t, 10000)
	image := filepath.Join(t.TempDir(), "busybox.tar")
	require.NoError(t, rootfs.EnsureBusyboxImage(image, "/usr/bin/busybox", "drover.local/rootfs/busybox:latest"))
	cfg := Config{
		Socket:            sock,
		Namespace:         ns,
		StateDir:          t.TempDir(),
		PreloadedRootFSes: map[string]string{"busybox": image},
		ArbitrarySchemes:  []string{"docker"},
		Network: network.Config{
			BridgeName:     bridge,
			Subnet:         freeSubnet(t),
			ExternalIP:     "127.0.0.1",
			PortRangeStart: start,
			PortRangeEnd:   start + 20,
		},
		GracePeriod:      2 * time.Second,
		DiskPollInterval: 200 * time.Millisecond,
		// The whole package runs unprivileged containers in user namespaces.
		UserNamespace: &executor.UserNamespace{HostUID: testHostUID, HostGID: testHostGID, Size: 65536},
	}
	// Registered after t.TempDir's cleanups, so they run before the state dir goes: the
	// containers first, then the cell's network.
	t.Cleanup(func() {
		if err := network.RemoveCell(context.Background(), cfg.withDefaults().Network, nil); err != nil {
			t.Errorf("remove the cell's network: %v", err)
		}
		if err := firewall.DeleteTable(firewall.TableName(ns)); err != nil {
			t.Errorf("remove the cell's firewall table: %v", err)
		}
	})
	t.Cleanup(func() {
		if err := PurgeNamespace(context.Background(), sock, ns); err != nil {
			t.Errorf("%v", err)
		}
	})
	return cfg
}

// newTestRuntime starts a runtime over cfg that destroys what it owns at the end.
func newTestRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	r, err := New(context.Background(), cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { destroyAllAndClose(t, cfg, r) })
	return r
}

// destroyAllAndClose destroys every owned container with a fresh runtime (r may be
// closed already) and closes both.
func destroyAllAndClose(t *testing.T, cfg Config, r *Runtime) {
	_ = r.Close()
	fresh, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Errorf("runtime for cleanup: %v", err)
		return
	}
	defer fresh.Close()
	ctrs, err := fresh.List(context.Background())
	if err != nil {
		t.Errorf("list at cleanup: %v", err)
	}
	for _, c := range ctrs {
		if err := fresh.Destroy(context.Background(), c.Guid); err != nil {
			t.Errorf("destroy %s at cleanup: %v", c.Guid, err)
		}
	}
}

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// busyboxSpec is a container on the preloaded busybox image.
func busyboxSpec(t *testing.T) executor.ContainerSpec {
	return executor.ContainerSpec{
		Guid:   "c-" + randHex(t, 6),
		RootFS: "preloaded:busybox",
		Tags:   map[string]string{executor.TagProcessGuid: "pg-1", executor.TagLifecycle: executor.LifecycleLRP},
		State:  []byte(`{"state":"created"}`),
	}
}

// create makes a container from spec.
func create(t *testing.T, r *Runtime, spec executor.ContainerSpec) executor.NetInfo {
	t.Helper()
	ni, err := r.Create(context.Background(), spec)
	require.NoError(t, err)
	return ni
}

// run execs a shell command as user and returns its exit and output.
func run(t *testing.T, r *Runtime, guid, user, script string, env ...string) (executor.ProcessExit, string, string) {
	t.Helper()
	var out, errOut syncBuffer
	p, err := r.Exec(context.Background(), guid, executor.ProcessSpec{
		ID: "p-" + randHex(t, 4), Path: "/bin/sh", Args: []string{"-c", script}, User: user, Env: env,
		Stdout: &out, Stderr: &errOut,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exit, err := p.Wait(ctx)
	require.NoError(t, err)
	return exit, out.String(), errOut.String()
}

// waitEvent waits for an event of kind for guid.
func waitEvent(t *testing.T, events <-chan executor.RuntimeEvent, guid string, kind executor.RuntimeEventKind) executor.RuntimeEvent {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Guid == guid && ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event for %s", kind, guid)
		}
	}
}

// requireNothingLeft checks that guid left no trace: container, snapshot, state, netns,
// veth on the bridge, iptables rules naming its address.
func requireNothingLeft(t *testing.T, r *Runtime, cfg Config, guid, ip string) {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), cfg.Namespace)
	_, err := r.client.LoadContainer(ctx, guid)
	require.Error(t, err, "container still in containerd")
	_, err = r.client.SnapshotService(DefaultSnapshotter).Stat(ctx, guid)
	require.Error(t, err, "snapshot still there")
	_, err = os.Stat(r.state.container(guid))
	require.True(t, os.IsNotExist(err), "state dir still there")
	entries, _ := os.ReadDir(filepath.Join(cfg.StateDir, "network", "netns"))
	for _, e := range entries {
		require.NotEqual(t, guid, e.Name(), "netns file still there")
	}
	if bridge, err := netlink.LinkByName(cfg.Network.BridgeName); err == nil {
		links, err := netlink.LinkList()
		require.NoError(t, err)
		for _, l := range links {
			require.NotEqual(t, bridge.Attrs().Index, l.Attrs().MasterIndex, "veth %s still on the bridge", l.Attrs().Name)
		}
	}
	require.False(t, r.fw.Has(guid), "egress firewall record still there")
	requireNoFirewallChain(t, cfg, guid)
	if ip != "" {
		out, err := exec.Command("iptables-save").Output()
		require.NoError(t, err)
		require.NotContains(t, string(out), ip+"/", "iptables rules still name %s", ip)
		require.NotContains(t, string(out), ip+":", "iptables rules still name %s", ip)
	}
}
