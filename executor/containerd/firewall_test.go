package containerd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"drover.dev/executor/firewall"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/google/nftables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// requireNoFirewallChain checks that the cell's table holds no chain of guid.
func requireNoFirewallChain(t *testing.T, cfg Config, guid string) {
	t.Helper()
	assert.NotContains(t, firewallChains(t, cfg), firewall.ChainName(guid), "egress firewall chain still there")
}

// firewallChains lists the chains of the cell's table.
func firewallChains(t *testing.T, cfg Config) []string {
	t.Helper()
	c, err := nftables.New()
	require.NoError(t, err)
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	require.NoError(t, err)
	var out []string
	for _, ch := range chains {
		if ch.Table.Name == firewall.TableName(cfg.Namespace) {
			out = append(out, ch.Name)
		}
	}
	return out
}

// targetHost is a test host: a network namespace of the test's own, routed from the host
// through a veth, serving "ok" over tcp on the given ports. Containers reach only it.
func targetHost(t *testing.T, ports ...int) string {
	t.Helper()
	id := randHex(t, 3)
	octet := 2 + randInt(t, 250)
	ns, host := "fwt"+id, "fwt"+id+"h"
	ip := fmt.Sprintf("10.233.%d.2", octet)
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", ns).Run()
		_ = exec.Command("ip", "link", "del", host).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"addr", "add", fmt.Sprintf("10.233.%d.1/24", octet), "dev", host},
		{"link", "set", host, "up"},
		{"-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "route", "add", "default", "via", fmt.Sprintf("10.233.%d.1", octet)},
	} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
	}
	for _, p := range ports {
		l := listenInNetns(t, ns, fmt.Sprintf("%s:%d", ip, p))
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("ok\n"))
				c.Close()
			}
		}()
	}
	return ip
}

// listenInNetns opens a tcp listener in the named network namespace, closed at cleanup.
func listenInNetns(t *testing.T, name, addr string) net.Listener {
	t.Helper()
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked if it cannot return: the thread then dies
		orig, err := netns.Get()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer orig.Close()
		h, err := netns.GetFromName(name)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			done <- result{err: err}
			return
		}
		l, err := net.Listen("tcp4", addr)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{l, err}
	}()
	res := <-done
	require.NoError(t, res.err)
	t.Cleanup(func() { res.l.Close() })
	return res.l
}

// reaches reports whether the container guid gets "ok" from ip:port.
func reaches(t *testing.T, r *Runtime, guid, ip string, port int) bool {
	t.Helper()
	exit, out, _ := run(t, r, guid, "root", fmt.Sprintf("nc -w 5 %s %d </dev/null", ip, port))
	return exit.Code == 0 && strings.Contains(out, "ok")
}

func kernelLog(t *testing.T) string {
	t.Helper()
	size, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	require.NoError(t, err)
	buf := make([]byte, size)
	n, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	require.NoError(t, err)
	return string(bytes.ToValidUTF8(buf[:n], nil))
}

func TestEgressRulesAreEnforcedRestoredAndRemoved(t *testing.T) {
	target := targetHost(t, 8101, 8102, 8103)
	cfg := testConfig(t)
	cfg.DefaultEgressRules = []*modelsv1.EgressRule{{Protocol: "tcp", Destinations: []string{target}, Ports: []uint32{8102}}}
	r := newTestRuntime(t, cfg)

	typ, code := int32(8), int32(0)
	open := busyboxSpec(t)
	open.EgressRules = []*modelsv1.EgressRule{
		{Protocol: "icmp", Destinations: []string{target}, IcmpInfo: &modelsv1.ICMPInfo{Type: &typ, Code: &code}},
		{Protocol: "tcp", Destinations: []string{target + "/32"}, Ports: []uint32{8101}, Log: true},
	}
	openNet := create(t, r, open)
	closed := busyboxSpec(t)
	create(t, r, closed)

	assert.True(t, reaches(t, r, open.Guid, target, 8101), "its rule opens 8101")
	assert.False(t, reaches(t, r, open.Guid, target, 8103), "nothing opens 8103")
	assert.True(t, reaches(t, r, open.Guid, target, 8102), "the cell's default opens 8102")
	exit, _, _ := run(t, r, open.Guid, "root", "ping -c 1 -W 5 "+target)
	assert.Equal(t, 0, exit.Code, "its icmp rule allows echo requests")
	assert.False(t, reaches(t, r, closed.Guid, target, 8101), "without rules only the defaults")
	assert.True(t, reaches(t, r, closed.Guid, target, 8102))
	exit, _, _ = run(t, r, closed.Guid, "root", "ping -c 1 -W 2 "+target)
	assert.NotEqual(t, 0, exit.Code)
	exit, out, _ := run(t, r, closed.Guid, "root", "nc -w 3 "+openNet.InternalIP+" 1 </dev/null; echo rc=$?")
	assert.Contains(t, out, "rc=1", "another container is out of reach too: %d", exit.Code)

	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(kernelLog(t), open.Guid+" IN="+cfg.Network.BridgeName) {
		require.True(t, time.Now().Before(deadline), "no kernel log line prefixed with %s", open.Guid)
		time.Sleep(100 * time.Millisecond)
	}

	// A restarted runtime keeps the rules of its containers.
	require.NoError(t, r.Close())
	r2 := newTestRuntime(t, cfg)
	assert.Contains(t, firewallChains(t, cfg), firewall.ChainName(open.Guid))
	assert.True(t, reaches(t, r2, open.Guid, target, 8101))
	assert.False(t, reaches(t, r2, open.Guid, target, 8103))

	require.NoError(t, r2.Destroy(context.Background(), open.Guid))
	requireNoFirewallChain(t, cfg, open.Guid)
	require.Contains(t, firewallChains(t, cfg), firewall.ChainName(closed.Guid))
	require.NoError(t, r2.Destroy(context.Background(), closed.Guid))
	requireNothingLeft(t, r2, cfg, open.Guid, openNet.InternalIP)
	requireNothingLeft(t, r2, cfg, closed.Guid, "")
	assert.ElementsMatch(t, []string{"forward", "input"}, firewallChains(t, cfg), "only the cell's base chains are left")
}
