package firewall

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"drover.dev/lib/testenv"
)

// testNet is a test's own network: a "container" namespace on a test bridge (the
// cell's bridge) and a target "host" namespace routed through the host. Every probe of
// the tests goes from the container namespace to the target namespace or to the bridge's
// address, nowhere else.
type testNet struct {
	id        string
	bridge    string
	ctrNS     string
	targetNS  string
	gwIP      string // the bridge's address (the host as the container sees it)
	ctrIP     string
	targetIP  string
	targetNet string // the target's /24
	octet     int
}

func requireRoot(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t, "nftables and network namespaces")
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.Missing(t, "iproute2", "install it with scripts/install-deps.sh")
	}
}

func randomID(t testing.TB) string {
	b := make([]byte, 3)
	_, err := rand.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func run(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newTestNet builds the test network; everything goes at cleanup.
func newTestNet(t *testing.T) *testNet {
	requireRoot(t)
	id := randomID(t)
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	n := &testNet{id: id, bridge: "fwb" + id, ctrNS: "fwc" + id, targetNS: "fwt" + id, octet: int(b[0]%250) + 2}
	n.gwIP = fmt.Sprintf("10.231.%d.1", n.octet)
	n.ctrIP = fmt.Sprintf("10.231.%d.2", n.octet)
	n.targetIP = fmt.Sprintf("10.232.%d.2", n.octet)
	n.targetNet = fmt.Sprintf("10.232.%d.0/24", n.octet)
	hostTarget := "fwt" + id + "h"
	hostCtr := "fwc" + id + "h"
	t.Cleanup(func() {
		for _, args := range [][]string{
			{"ip", "netns", "del", n.ctrNS}, {"ip", "netns", "del", n.targetNS},
			{"ip", "link", "del", n.bridge}, {"ip", "link", "del", hostTarget}, {"ip", "link", "del", hostCtr},
		} {
			_ = exec.Command(args[0], args[1:]...).Run()
		}
	})
	run(t, "ip", "link", "add", n.bridge, "type", "bridge")
	run(t, "ip", "addr", "add", n.gwIP+"/24", "dev", n.bridge)
	run(t, "ip", "link", "set", n.bridge, "up")
	run(t, "ip", "netns", "add", n.ctrNS)
	run(t, "ip", "link", "add", hostCtr, "type", "veth", "peer", "name", "eth0", "netns", n.ctrNS)
	run(t, "ip", "link", "set", hostCtr, "master", n.bridge, "up")
	run(t, "ip", "-n", n.ctrNS, "addr", "add", n.ctrIP+"/24", "dev", "eth0")
	run(t, "ip", "-n", n.ctrNS, "link", "set", "eth0", "up")
	run(t, "ip", "-n", n.ctrNS, "link", "set", "lo", "up")
	run(t, "ip", "-n", n.ctrNS, "route", "add", "default", "via", n.gwIP)
	run(t, "ip", "netns", "add", n.targetNS)
	run(t, "ip", "link", "add", hostTarget, "type", "veth", "peer", "name", "eth0", "netns", n.targetNS)
	run(t, "ip", "addr", "add", fmt.Sprintf("10.232.%d.1/24", n.octet), "dev", hostTarget)
	run(t, "ip", "link", "set", hostTarget, "up")
	run(t, "ip", "-n", n.targetNS, "addr", "add", n.targetIP+"/24", "dev", "eth0")
	run(t, "ip", "-n", n.targetNS, "link", "set", "eth0", "up")
	run(t, "ip", "-n", n.targetNS, "link", "set", "lo", "up")
	run(t, "ip", "-n", n.targetNS, "route", "add", "default", "via", fmt.Sprintf("10.232.%d.1", n.octet))
	enableForwarding(t)
	return n
}

// inNS runs fn on a thread in the named network namespace (sockets fn opens stay there).
func inNS(name string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			done <- err
			return
		}
		defer orig.Close()
		h, err := netns.GetFromName(name)
		if err != nil {
			done <- err
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			done <- err
			return
		}
		err = fn()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		} // else the thread dies with the goroutine
		done <- err
	}()
	return <-done
}

// serveTCP listens on ip:port in namespace ns (or the host when ns is "") and answers
// "ok" to every connection, until cleanup.
func serveTCP(t *testing.T, ns, addr string) {
	t.Helper()
	var l net.Listener
	listen := func() (err error) { l, err = net.Listen("tcp4", addr); return err }
	var err error
	if ns == "" {
		err = listen()
	} else {
		err = inNS(ns, listen)
	}
	if err != nil {
		t.Fatalf("listen %s in %q: %v", addr, ns, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("ok"))
			c.Close()
		}
	}()
}

// serveUDP echoes datagrams on addr in namespace ns until cleanup.
func serveUDP(t *testing.T, ns, addr string) {
	t.Helper()
	var pc net.PacketConn
	if err := inNS(ns, func() (err error) { pc, err = net.ListenPacket("udp4", addr); return err }); err != nil {
		t.Fatalf("listen udp %s: %v", addr, err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
}

// probeTCP reports whether a connection from namespace ns to addr gets "ok".
func probeTCP(ns, addr string) bool {
	return inNS(ns, func() error {
		c, err := net.DialTimeout("tcp4", addr, 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 2)
		if _, err := c.Read(b); err != nil {
			return err
		}
		if string(b) != "ok" {
			return errors.New("bad answer")
		}
		return nil
	}) == nil
}

// probeUDP reports whether a datagram from namespace ns to addr is echoed (3 tries).
func probeUDP(ns, addr string) bool {
	return inNS(ns, func() error {
		c, err := net.Dial("udp4", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < 3; i++ {
			_, _ = c.Write([]byte("hi"))
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			b := make([]byte, 2)
			if n, err := c.Read(b); err == nil && string(b[:n]) == "hi" {
				return nil
			}
		}
		return errors.New("no echo")
	}) == nil
}

// ping reports whether one echo request from namespace ns to ip is answered.
func ping(ns, ip string) bool {
	return exec.Command("ip", "netns", "exec", ns, "busybox", "ping", "-c", "1", "-W", "3", ip).Run() == nil
}

// kernelLog reads the kernel's log buffer.
func kernelLog(t *testing.T) string {
	t.Helper()
	size, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	if err != nil {
		t.Fatalf("klogctl: %v", err)
	}
	buf := make([]byte, size)
	n, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	if err != nil {
		t.Fatalf("klogctl: %v", err)
	}
	return string(bytes.ToValidUTF8(buf[:n], nil))
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// enableForwarding turns net.ipv4.ip_forward on for the test's routed namespaces, as a
// cell's CNI bridge does, and restores the previous value when the test ends.
func enableForwarding(t *testing.T) {
	t.Helper()
	const path = "/proc/sys/net/ipv4/ip_forward"
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	if strings.TrimSpace(string(before)) == "1" {
		return
	}
	require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o644))
	t.Cleanup(func() { _ = os.WriteFile(path, before, 0o644) })
}
