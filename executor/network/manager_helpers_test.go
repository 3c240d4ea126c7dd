package network

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"drover.dev/lib/testenv"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
)

// requireHost skips the test (testenv.Missing) unless it can create namespaces and run
// the CNI plugins.
func requireHost(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "network tests create namespaces, bridges and iptables rules")
	for _, p := range requiredPlugins {
		if _, err := os.Stat(filepath.Join(DefaultCNIBinDir, p)); err != nil {
			testenv.Missing(t, "the CNI plugin "+p, fmt.Sprintf("not in %s: run scripts/install-deps.sh (containernetworking-plugins)", DefaultCNIBinDir))
		}
	}
	if _, err := exec.LookPath("iptables-save"); err != nil {
		testenv.Missing(t, "iptables-save", "run scripts/install-deps.sh (iptables)")
	}
}

var subnetMu sync.Mutex

// randInt returns a random int in [0,n).
func randInt(t *testing.T, n int64) int {
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	require.NoError(t, err)
	return int(v.Int64())
}

// freeSubnet picks 10.200.N.0/24 with a random N that no host route overlaps.
func freeSubnet(t *testing.T) string {
	subnetMu.Lock()
	defer subnetMu.Unlock()
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	require.NoError(t, err)
	for range 100 {
		n := 1 + randInt(t, 254)
		_, candidate, _ := net.ParseCIDR(fmt.Sprintf("10.200.%d.0/24", n))
		taken := false
		for _, r := range routes {
			if r.Dst == nil {
				continue
			}
			if ones, _ := r.Dst.Mask.Size(); ones == 0 {
				continue // a default route
			}
			if r.Dst.Contains(candidate.IP) || candidate.Contains(r.Dst.IP) {
				taken = true
			}
		}
		if !taken {
			return candidate.String()
		}
	}
	t.Fatal("no free 10.200.N.0/24 subnet")
	return ""
}

// testConfig is a config of its own for one test: bridge, subnet, port range, state dir.
// The cell's network (bridge and all) is removed when the test ends.
func testConfig(t *testing.T, ports int) Config {
	t.Helper()
	b := make([]byte, 5)
	_, err := rand.Read(b)
	require.NoError(t, err)
	start := 20000 + randInt(t, 10000)
	cfg := Config{
		StateDir:       t.TempDir(),
		BridgeName:     "dt" + hex.EncodeToString(b), // 12 characters
		Subnet:         freeSubnet(t),
		ExternalIP:     "127.0.0.1",
		PortRangeStart: start,
		PortRangeEnd:   start + ports - 1,
	}
	// Registered after t.TempDir's own cleanup, so it runs before the state dir goes.
	t.Cleanup(func() {
		if err := RemoveCell(context.Background(), cfg, nil); err != nil {
			t.Errorf("remove the cell's network: %v", err)
		}
	})
	return cfg
}

// newTestManager makes a Manager over cfg that prunes everything it holds when the test
// ends (before the bridge goes, as cleanups run last-in first-out).
func newTestManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	m, err := New(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := m.Prune(context.Background(), nil); err != nil {
			t.Errorf("prune at cleanup: %v", err)
		}
	})
	return m
}

// serveInNetns listens on port inside the namespace at path and answers every connection
// with reply. The listener is closed when the test ends.
func serveInNetns(t *testing.T, path string, port uint32, reply string) {
	t.Helper()
	var l net.Listener
	err := ns.WithNetNSPath(path, func(ns.NetNS) error {
		var err error
		l, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, reply)
			c.Close()
		}
	}()
}

// dialReply connects to addr and reads one line.
func dialReply(addr string) (string, error) {
	c, err := net.DialTimeout("tcp4", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// requireReply waits until addr answers with want.
func requireReply(t *testing.T, addr, want string) {
	t.Helper()
	var last string
	var lastErr error
	require.Eventually(t, func() bool {
		last, lastErr = dialReply(addr)
		return lastErr == nil && last == want
	}, 10*time.Second, 50*time.Millisecond, "dial %s: want %q, got %q (%v)", addr, want, last, lastErr)
}

// iptablesMentions reports whether any rule or chain in any table names ip.
func iptablesMentions(t *testing.T, ip string) bool {
	t.Helper()
	out, err := exec.Command("iptables-save").CombinedOutput()
	require.NoError(t, err, string(out))
	re := regexp.MustCompile(regexp.QuoteMeta(ip) + `([/:\s]|$)`)
	return re.Match(out)
}

// portNames lists the names of the interfaces attached to bridge (the host veth ends).
func portNames(t *testing.T, bridge string) []string {
	t.Helper()
	links, err := bridgePorts(bridge)
	require.NoError(t, err)
	var out []string
	for _, l := range links {
		out = append(out, l.Attrs().Name)
	}
	return out
}

// ipamReserved reports whether host-local holds a reservation for ip.
func ipamReserved(cfg Config, ip string) bool {
	_, err := os.Stat(filepath.Join(ipamDir(cfg.StateDir), networkName(cfg.BridgeName), ip))
	return err == nil
}

// hostAddr is ExternalIP:hostPort of a mapping.
func hostAddr(a Attachment, hostPort uint32) string {
	return net.JoinHostPort(a.ExternalIP, fmt.Sprint(hostPort))
}
