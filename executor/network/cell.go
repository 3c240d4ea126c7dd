package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/coreos/go-iptables/iptables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RemoveCell removes everything the cell of cfg holds on the host, for a cell that goes
// away for good once nothing runs in it and no Manager serves it: every attachment,
// recorded or stray, as Prune removes it (CNI DEL: veth, address, the container's
// iptables rules; then its namespace file), the cell's bridge with any interface still on
// it, and any iptables rule still naming the cell's subnet, bridge or CNI network along
// with the chains only such rules jumped to. The state directory's other files stay.
// An attachment whose CNI DEL fails (a second DEL after a rep was killed mid-teardown) is
// removed anyway, since the sweep removes what its DEL would have.
// Removing what is not there succeeds; it carries on past a failure and returns them all.
func RemoveCell(ctx context.Context, cfg Config, logger *slog.Logger) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, subnet, _ := net.ParseCIDR(cfg.Subnet) // Validate parsed it
	var errs []error
	if _, err := os.Stat(cfg.StateDir); err == nil {
		m, err := New(cfg, logger)
		if err == nil {
			err = m.removeAll(ctx)
		}
		errs = append(errs, err)
	}
	errs = append(errs, removeBridge(cfg.BridgeName))
	ipt, err := iptables.New()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("iptables: %w", err))...)
	}
	errs = append(errs, removeCellRules(ipt, subnet, cfg.BridgeName))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove cell network %s: %w", cfg.BridgeName, err)
	}
	return nil
}

// CellLeftovers lists, one line each, what the cell of cfg holds on the host beyond its
// bridge: namespace files, interfaces on the bridge and iptables rules naming the cell's
// subnet, bridge or CNI network. A cell with no container attached has none.
func CellLeftovers(cfg Config) ([]string, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	_, subnet, _ := net.ParseCIDR(cfg.Subnet) // Validate parsed it
	var out []string
	entries, err := os.ReadDir(netnsDir(cfg.StateDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list netns files: %w", err)
	}
	for _, e := range entries {
		out = append(out, "netns file "+netnsDir(cfg.StateDir)+"/"+e.Name())
	}
	ports, err := bridgePorts(cfg.BridgeName)
	if err != nil {
		return nil, err
	}
	for _, l := range ports {
		out = append(out, "interface "+l.Attrs().Name+" on bridge "+cfg.BridgeName)
	}
	ipt, err := iptables.New()
	if err != nil {
		return nil, fmt.Errorf("iptables: %w", err)
	}
	rules, err := cellRules(ipt, subnet, cfg.BridgeName)
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		out = append(out, "iptables "+r.String())
	}
	return out, nil
}

// bridgePorts lists the interfaces attached to bridge (the host ends of the veths); none
// when there is no such bridge.
func bridgePorts(bridge string) ([]netlink.Link, error) {
	br, err := netlink.LinkByName(bridge)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find bridge %s: %w", bridge, err)
	}
	links, err := linkList()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	var out []netlink.Link
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			out = append(out, l)
		}
	}
	return out, nil
}

// removeBridge deletes the interfaces on bridge, then the bridge; a missing bridge or
// an interface gone meanwhile is fine.
func removeBridge(bridge string) error {
	ports, err := bridgePorts(bridge)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range ports {
		if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete interface %s on bridge %s: %w", l.Attrs().Name, bridge, err))
		}
	}
	br, err := netlink.LinkByName(bridge)
	switch {
	case errors.As(err, &netlink.LinkNotFoundError{}):
	case err != nil:
		errs = append(errs, fmt.Errorf("find bridge %s: %w", bridge, err))
	default:
		if err := netlink.LinkDel(br); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete bridge %s: %w", bridge, err))
		}
	}
	return errors.Join(errs...)
}

// linkList lists the host's interfaces, again when the kernel interrupted the dump
// because interfaces came or went meanwhile.
func linkList() ([]netlink.Link, error) {
	for attempt := 1; ; attempt++ {
		links, err := netlink.LinkList()
		if !errors.Is(err, netlink.ErrDumpInterrupted) || attempt == 10 {
			return links, err
		}
	}
}
