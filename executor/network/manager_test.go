package network

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetupReachableInternallyAndThroughHostPorts(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 10)
	m := newTestManager(t, cfg)

	a, err := m.Setup(context.Background(), "reach-1", []uint32{8080, 9090, 8080})
	require.NoError(t, err)

	assert.Equal(t, filepath.Join(cfg.StateDir, "netns", "reach-1"), a.NetnsPath)
	assert.NoError(t, ns.IsNSorErr(a.NetnsPath), "netns file is a namespace")
	assert.Equal(t, "127.0.0.1", a.ExternalIP)
	_, subnet, _ := net.ParseCIDR(cfg.Subnet)
	assert.True(t, subnet.Contains(net.ParseIP(a.InternalIP)), "internal IP %s in %s", a.InternalIP, cfg.Subnet)
	require.Len(t, a.Ports, 2, "container ports are de-duplicated")
	assert.Equal(t, []uint32{8080, 9090}, []uint32{a.Ports[0].ContainerPort, a.Ports[1].ContainerPort})
	assert.NotEqual(t, a.Ports[0].HostPort, a.Ports[1].HostPort)
	for _, p := range a.Ports {
		assert.GreaterOrEqual(t, int(p.HostPort), cfg.PortRangeStart)
		assert.LessOrEqual(t, int(p.HostPort), cfg.PortRangeEnd)
	}

	for _, p := range a.Ports {
		reply := fmt.Sprintf("hello from %d", p.ContainerPort)
		serveInNetns(t, a.NetnsPath, p.ContainerPort, reply)
		requireReply(t, net.JoinHostPort(a.InternalIP, fmt.Sprint(p.ContainerPort)), reply)
		requireReply(t, hostAddr(a, p.HostPort), reply)
	}

	got, ok := m.Lookup("reach-1")
	require.True(t, ok)
	assert.Equal(t, a, got)
}

func TestTwoAttachmentsGetDistinctAddressesAndPorts(t *testing.T) {
	requireHost(t)
	t.Parallel()
	m := newTestManager(t, testConfig(t, 10))
	ctx := context.Background()

	a, err := m.Setup(ctx, "pair-a", []uint32{8080})
	require.NoError(t, err)
	b, err := m.Setup(ctx, "pair-b", []uint32{8080})
	require.NoError(t, err)

	assert.NotEqual(t, a.InternalIP, b.InternalIP)
	assert.NotEqual(t, a.NetnsPath, b.NetnsPath)
	assert.NotEqual(t, a.Ports[0].HostPort, b.Ports[0].HostPort)

	serveInNetns(t, a.NetnsPath, 8080, "a")
	serveInNetns(t, b.NetnsPath, 8080, "b")
	requireReply(t, hostAddr(a, a.Ports[0].HostPort), "a")
	requireReply(t, hostAddr(b, b.Ports[0].HostPort), "b")
	requireReply(t, net.JoinHostPort(a.InternalIP, "8080"), "a")
	requireReply(t, net.JoinHostPort(b.InternalIP, "8080"), "b")

	_, err = m.Setup(ctx, "pair-a", []uint32{8080})
	assert.ErrorContains(t, err, "already set up")
	still, ok := m.Lookup("pair-a")
	require.True(t, ok, "a refused second setup leaves the first alone")
	assert.Equal(t, a, still)
}

func TestTeardownRemovesEverythingAndIsIdempotent(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 3)
	m := newTestManager(t, cfg)
	ctx := context.Background()

	a, err := m.Setup(ctx, "gone-1", []uint32{8080, 8081, 8082})
	require.NoError(t, err)
	require.Len(t, portNames(t, cfg.BridgeName), 1, "one veth on the bridge")
	require.True(t, iptablesMentions(t, a.InternalIP), "iptables has rules for the container")
	require.True(t, ipamReserved(cfg, a.InternalIP))
	_, err = m.Setup(ctx, "other", []uint32{8080})
	require.ErrorIs(t, err, ErrPortsExhausted, "the range is used up")

	require.NoError(t, m.Teardown(ctx, "gone-1"))

	assert.NoFileExists(t, a.NetnsPath)
	assert.Empty(t, portNames(t, cfg.BridgeName), "veth removed")
	assert.False(t, iptablesMentions(t, a.InternalIP), "no iptables rule names %s", a.InternalIP)
	assert.False(t, ipamReserved(cfg, a.InternalIP), "IPAM reservation released")
	assert.NoFileExists(t, filepath.Join(cfg.StateDir, "records", "gone-1.json"))
	_, ok := m.Lookup("gone-1")
	assert.False(t, ok)
	_, err = dialReply(hostAddr(a, a.Ports[0].HostPort))
	assert.Error(t, err, "the host port leads nowhere")

	require.NoError(t, m.Teardown(ctx, "gone-1"), "second teardown")
	require.NoError(t, m.Teardown(ctx, "never-was"), "teardown of an unknown guid")

	b, err := m.Setup(ctx, "reuse", []uint32{1, 2, 3})
	require.NoError(t, err, "freed host ports are reused")
	assert.ElementsMatch(t, hostPortsOf(a), hostPortsOf(b))
}

func TestRestartedManagerLooksUpAndPrunes(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 4)
	ctx := context.Background()
	old, err := New(cfg, nil)
	require.NoError(t, err)
	gone, err := old.Setup(ctx, "old-gone", []uint32{8080})
	require.NoError(t, err)
	kept, err := old.Setup(ctx, "old-kept", []uint32{8080, 9090})
	require.NoError(t, err)

	m := newTestManager(t, cfg) // the rep restarted
	got, ok := m.Lookup("old-gone")
	require.True(t, ok)
	assert.Equal(t, gone, got)
	got, ok = m.Lookup("old-kept")
	require.True(t, ok)
	assert.Equal(t, kept, got)

	require.NoError(t, m.Prune(ctx, func(guid string) bool { return guid == "old-kept" }))

	_, ok = m.Lookup("old-gone")
	assert.False(t, ok)
	assert.NoFileExists(t, gone.NetnsPath)
	assert.False(t, iptablesMentions(t, gone.InternalIP))
	assert.False(t, ipamReserved(cfg, gone.InternalIP))
	assert.Len(t, portNames(t, cfg.BridgeName), 1, "only the kept veth remains")

	serveInNetns(t, kept.NetnsPath, 9090, "kept")
	requireReply(t, hostAddr(kept, kept.Ports[1].HostPort), "kept")

	next, err := m.Setup(ctx, "new-one", []uint32{1, 2})
	require.NoError(t, err, "the pruned attachment's port is free again")
	assert.NotContains(t, hostPortsOf(next), kept.Ports[0].HostPort)
	assert.NotContains(t, hostPortsOf(next), kept.Ports[1].HostPort)
}

func TestPruneClearsStraysWithoutRecords(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 4)
	ctx := context.Background()
	old, err := New(cfg, nil)
	require.NoError(t, err)
	a, err := old.Setup(ctx, "stray-1", []uint32{8080})
	require.NoError(t, err)
	// A crash that lost the record: only the namespace, IPAM entry and rules remain.
	require.NoError(t, os.Remove(filepath.Join(cfg.StateDir, "records", "stray-1.json")))

	m := newTestManager(t, cfg)
	_, ok := m.Lookup("stray-1")
	require.False(t, ok)
	require.NoError(t, m.Prune(ctx, func(string) bool { return false }))

	assert.NoFileExists(t, a.NetnsPath)
	assert.False(t, iptablesMentions(t, a.InternalIP))
	assert.False(t, ipamReserved(cfg, a.InternalIP))
	assert.Empty(t, portNames(t, cfg.BridgeName))
}

func TestPortExhaustionLeavesNothingBehind(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 2)
	m := newTestManager(t, cfg)
	ctx := context.Background()

	_, err := m.Setup(ctx, "greedy", []uint32{1, 2, 3})
	require.ErrorIs(t, err, ErrPortsExhausted)
	assert.ErrorContains(t, err, "3 wanted, 2 of")
	assert.NoFileExists(t, filepath.Join(cfg.StateDir, "netns", "greedy"))
	assert.NoFileExists(t, filepath.Join(cfg.StateDir, "records", "greedy.json"))

	_, err = m.Setup(ctx, "fits", []uint32{1, 2})
	require.NoError(t, err)
	_, err = m.Setup(ctx, "one-more", []uint32{1})
	require.ErrorIs(t, err, ErrPortsExhausted)
	noPorts, err := m.Setup(ctx, "no-ports", nil)
	require.NoError(t, err, "a container without ports needs no host port")
	assert.Empty(t, noPorts.Ports)
}

func TestSetupFailureRollsBack(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 2)
	cfg.CNIBinDir = failingPortmapBinDir(t)
	m := newTestManager(t, cfg)

	_, err := m.Setup(context.Background(), "fails-1", []uint32{8080})
	require.Error(t, err)
	assert.ErrorContains(t, err, "injected portmap failure")

	assert.NoFileExists(t, filepath.Join(cfg.StateDir, "netns", "fails-1"))
	assert.NoFileExists(t, filepath.Join(cfg.StateDir, "records", "fails-1.json"))
	assert.Empty(t, portNames(t, cfg.BridgeName), "veth removed")
	entries, err := os.ReadDir(filepath.Join(ipamDir(cfg.StateDir), networkName(cfg.BridgeName)))
	require.NoError(t, err)
	for _, e := range entries {
		assert.Contains(t, []string{"lock", "last_reserved_ip.0"}, e.Name(), "no IPAM reservation left")
	}
	_, ok := m.Lookup("fails-1")
	assert.False(t, ok)
	assert.Equal(t, 2, m.ports.free(), "host ports freed")
}

func TestInvalidInputIsRefused(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 2)
	m := newTestManager(t, cfg)
	ctx := context.Background()
	for _, guid := range []string{"", "../escape", "a/b", "-dash-first"} {
		_, err := m.Setup(ctx, guid, nil)
		assert.ErrorContains(t, err, "guid", "setup %q", guid)
		assert.ErrorContains(t, m.Teardown(ctx, guid), "guid", "teardown %q", guid)
	}
	_, err := m.Setup(ctx, "bad-port", []uint32{0})
	assert.ErrorContains(t, err, "container port 0")

	cfg.BridgeName = ""
	_, err = New(cfg, nil)
	assert.ErrorContains(t, err, "bridge_name is required")
	cfg.BridgeName = "ok"
	cfg.CNIBinDir = t.TempDir()
	_, err = New(cfg, nil)
	assert.ErrorContains(t, err, "lacks the bridge plugin")
}

// failingPortmapBinDir is a CNI bin dir with the real bridge and host-local and a portmap
// that fails every ADD.
func failingPortmapBinDir(t *testing.T) string {
	dir := t.TempDir()
	for _, p := range []string{"bridge", "host-local"} {
		require.NoError(t, os.Symlink(filepath.Join(DefaultCNIBinDir, p), filepath.Join(dir, p)))
	}
	script := `#!/bin/sh
case "$CNI_COMMAND" in
ADD) echo '{"cniVersion":"1.0.0","code":999,"msg":"injected portmap failure"}'; exit 1 ;;
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}' ;;
esac
exit 0
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "portmap"), []byte(script), 0o755))
	return dir
}

func hostPortsOf(a Attachment) []uint32 {
	out := make([]uint32, 0, len(a.Ports))
	for _, p := range a.Ports {
		out = append(out, p.HostPort)
	}
	return out
}

func TestTeardownAfterACorruptRecord(t *testing.T) {
	requireHost(t)
	t.Parallel()
	cfg := testConfig(t, 4)
	ctx := context.Background()
	old, err := New(cfg, nil)
	require.NoError(t, err)
	a, err := old.Setup(ctx, "corrupt-1", []uint32{8080})
	require.NoError(t, err)
	recordPath := filepath.Join(cfg.StateDir, "records", "corrupt-1.json")
	require.NoError(t, os.WriteFile(recordPath, []byte("{not json"), 0o644))
	leftover := filepath.Join(cfg.StateDir, "records", ".corrupt-1.tmp-123")
	require.NoError(t, os.WriteFile(leftover, []byte("{}"), 0o644))

	m := newTestManager(t, cfg)
	_, ok := m.Lookup("corrupt-1")
	assert.False(t, ok, "an unreadable record is no usable attachment")
	assert.NoFileExists(t, leftover, "a half-written record is removed")
	require.NoError(t, m.Teardown(ctx, "corrupt-1"))

	assert.NoFileExists(t, a.NetnsPath)
	assert.NoFileExists(t, recordPath)
	assert.False(t, iptablesMentions(t, a.InternalIP), "portmap and masquerade rules removed")
	assert.False(t, ipamReserved(cfg, a.InternalIP))
}
