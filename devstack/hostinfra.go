package devstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// hostNetworkLock serialises choosing and creating test networks across processes, so
// that two stacks starting together do not take the same subnet.
const hostNetworkLock = "/run/drover-host-networks.lock"

// NewHostID returns a random id for a HostNetwork.
func NewHostID() (string, error) {
	b := make([]byte, hostIDLength/2)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("hosts: random id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// CreateHostNetwork creates a test network with id and cells cell hosts (PlanHostNetwork)
// on the first free 10.213.N.0/24: the bridge with the gateway address, and per host a
// network namespace, a veth into the bridge, the host's address on its eth0 and its
// loopback up; cell hosts forward IPv4 (their containers sit behind them). On error
// whatever was created is removed again.
func CreateHostNetwork(ctx context.Context, id string, cells int) (*HostNetwork, error) {
	unlock, err := hostLockFile(hostNetworkLock)
	if err != nil {
		return nil, err
	}
	defer unlock()
	used, err := usedPrefixes(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := PlanHostNetwork(id, cells, used)
	if err != nil {
		return nil, err
	}
	n := &plan
	if err := n.create(ctx); err != nil {
		return nil, errors.Join(err, n.Remove(context.WithoutCancel(ctx)))
	}
	return n, nil
}

func (n *HostNetwork) create(ctx context.Context) error {
	gw := n.Gateway + "/24"
	if err := ipCmd(ctx, "link", "add", n.Bridge, "type", "bridge"); err != nil {
		return err
	}
	if err := ipCmd(ctx, "addr", "add", gw, "dev", n.Bridge); err != nil {
		return err
	}
	if err := ipCmd(ctx, "link", "set", n.Bridge, "up"); err != nil {
		return err
	}
	for _, h := range n.Hosts {
		if err := n.createHost(ctx, h); err != nil {
			return fmt.Errorf("hosts: %s: %w", h.Name, err)
		}
	}
	return nil
}

func (n *HostNetwork) createHost(ctx context.Context, h Host) error {
	steps := [][]string{
		{"netns", "add", h.Netns},
		{"link", "add", h.Veth, "type", "veth", "peer", "name", "eth0", "netns", h.Netns},
		{"link", "set", h.Veth, "master", n.Bridge, "up"},
		{"-n", h.Netns, "addr", "add", h.IP + "/24", "dev", "eth0"},
		{"-n", h.Netns, "link", "set", "eth0", "up"},
		{"-n", h.Netns, "link", "set", "lo", "up"},
	}
	for _, args := range steps {
		if err := ipCmd(ctx, args...); err != nil {
			return err
		}
	}
	if h.Name != HostControl && h.Name != HostRouter && h.Name != HostClient {
		// The rep's containers are behind the cell host: it routes (and NATs) for them.
		return runIn(ctx, h.Netns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	}
	return nil
}

// RemoveHost takes the test host name off the network as a machine that disappears: its
// veth and its namespace go (processes still in it lose their network). It is not an
// error when they are already gone.
func (n *HostNetwork) RemoveHost(ctx context.Context, name string) error {
	h := n.Host(name)
	if h == nil {
		return fmt.Errorf("hosts: no test host %q", name)
	}
	return removeHost(ctx, *h)
}

func removeHost(ctx context.Context, h Host) error {
	var errs []error
	if linkExists(ctx, "", h.Veth) {
		errs = append(errs, ipCmd(ctx, "link", "del", h.Veth))
	}
	if _, err := os.Stat(h.NetnsPath()); err == nil {
		errs = append(errs, ipCmd(ctx, "netns", "del", h.Netns))
	}
	return errors.Join(errs...)
}

// Remove removes every host (veth and namespace) and the bridge; what is already gone
// is skipped. Deleting a namespace also deletes what was inside it: the cells' CNI
// bridges, their iptables and nftables rules.
func (n *HostNetwork) Remove(ctx context.Context) error {
	var errs []error
	for _, h := range n.Hosts {
		errs = append(errs, removeHost(ctx, h))
	}
	if linkExists(ctx, "", n.Bridge) {
		errs = append(errs, ipCmd(ctx, "link", "del", n.Bridge))
	}
	return errors.Join(errs...)
}

// Leftovers lists, one line each, what of the network still exists on the machine:
// namespaces, veths and the bridge. A removed network has none.
func (n *HostNetwork) Leftovers(ctx context.Context) []string {
	var out []string
	for _, h := range n.Hosts {
		if _, err := os.Stat(h.NetnsPath()); err == nil {
			out = append(out, "netns "+h.Netns)
		}
		if linkExists(ctx, "", h.Veth) {
			out = append(out, "veth "+h.Veth)
		}
	}
	if linkExists(ctx, "", n.Bridge) {
		out = append(out, "bridge "+n.Bridge)
	}
	return out
}

// linkExists reports whether the interface exists (in the root namespace when netns is "").
func linkExists(ctx context.Context, netns, name string) bool {
	args := []string{"link", "show", "dev", name}
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	return exec.CommandContext(ctx, "ip", args...).Run() == nil
}

// usedPrefixes lists the IPv4 prefixes of the machine's addresses and routes (every
// routing table).
func usedPrefixes(ctx context.Context) ([]netip.Prefix, error) {
	var out []netip.Prefix
	addrs, err := ipJSON[[]struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}](ctx, "-4", "addr", "show")
	if err != nil {
		return nil, err
	}
	for _, link := range addrs {
		for _, a := range link.AddrInfo {
			if p, err := netip.ParsePrefix(fmt.Sprintf("%s/%d", a.Local, a.PrefixLen)); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	routes, err := ipJSON[[]struct {
		Dst string `json:"dst"`
	}](ctx, "-4", "route", "show", "table", "all")
	if err != nil {
		return nil, err
	}
	for _, r := range routes {
		dst := r.Dst
		if dst == "default" || dst == "" {
			continue
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if p, err := netip.ParsePrefix(dst); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out, nil
}

// ipJSON runs `ip -j ARGS` and decodes its output.
func ipJSON[T any](ctx context.Context, args ...string) (T, error) {
	var out T
	cmd := exec.CommandContext(ctx, "ip", append([]string{"-j"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return out, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return out, fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// ipCmd runs `ip ARGS`.
func ipCmd(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runIn runs a command inside the network namespace netns (nsenter, which changes only
// the network namespace).
func runIn(ctx context.Context, netns string, name string, args ...string) error {
	full := append([]string{"--net=" + NetnsPath(netns), "--", name}, args...)
	out, err := exec.CommandContext(ctx, nsenterPath, full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("in %s: %s %s: %w: %s", netns, name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// hostLockFile takes an exclusive flock on path (created if missing) until unlock.
func hostLockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("hosts: lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("hosts: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
