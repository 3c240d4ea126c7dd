package devstack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// iptablesTables are the tables CNI's bridge and portmap plugins write to.
var iptablesTables = []string{"nat", "filter", "mangle"}

// cniNetworkName is the CNI network name the executor gives a cell's bridge; its
// per-container iptables rules carry it in their comments.
func cniNetworkName(bridge string) string { return "drover-" + bridge }

// iptablesRule is one "-A CHAIN ..." line of iptables-save, split into arguments.
type iptablesRule struct {
	Table, Chain string
	Args         []string
	Line         string
}

// target is the chain the rule jumps or goes to, "" when none.
func (r iptablesRule) target() string {
	for i, a := range r.Args {
		if (a == "-j" || a == "-g") && i+1 < len(r.Args) {
			return r.Args[i+1]
		}
	}
	return ""
}

// mentions reports whether the rule names an address in subnet or the cell's bridge or
// CNI network.
func (r iptablesRule) mentions(subnet *net.IPNet, bridge string) bool {
	for _, a := range r.Args {
		if a == bridge || strings.Contains(a, `"`+cniNetworkName(bridge)+`"`) || strings.Contains(a, `name: `+cniNetworkName(bridge)) {
			return true
		}
		addr, _, _ := strings.Cut(a, "/")
		if ip := net.ParseIP(addr); ip != nil && subnet.Contains(ip) {
			return true
		}
	}
	return false
}

// iptablesState is a table's chains and rules as iptables-save prints them.
type iptablesState struct {
	chains map[string]bool // user-defined chains
	rules  []iptablesRule
}

func readIptables(ctx context.Context, table string) (iptablesState, error) {
	out, err := exec.CommandContext(ctx, "iptables-save", "-t", table).Output()
	if err != nil {
		return iptablesState{}, fmt.Errorf("iptables-save -t %s: %w", table, err)
	}
	st := iptablesState{chains: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
			name, policy, _ := strings.Cut(line[1:], " ")
			if strings.HasPrefix(policy, "-") { // built-in chains have a policy
				st.chains[name] = true
			}
		case strings.HasPrefix(line, "-A "):
			args := splitIptablesArgs(line[3:])
			if len(args) == 0 {
				continue
			}
			st.rules = append(st.rules, iptablesRule{Table: table, Chain: args[0], Args: args[1:], Line: line})
		}
	}
	return st, sc.Err()
}

// splitIptablesArgs splits an iptables-save rule, honouring its double quotes and
// backslash escapes.
func splitIptablesArgs(s string) []string {
	var args []string
	var cur strings.Builder
	inQuote, escaped, started := false, false, false
	for _, c := range s {
		switch {
		case escaped:
			cur.WriteRune(c)
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
			started = true
		case c == ' ' && !inQuote:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(c)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}

// cellIptablesRules lists the rules mentioning the cell's subnet, bridge or CNI network.
func cellIptablesRules(ctx context.Context, subnet, bridge string) ([]iptablesRule, error) {
	_, ipnet, err := net.ParseCIDR(subnet)
	if err != nil {
		return nil, fmt.Errorf("subnet %q: %w", subnet, err)
	}
	var out []iptablesRule
	for _, table := range iptablesTables {
		st, err := readIptables(ctx, table)
		if err != nil {
			return nil, err
		}
		for _, r := range st.rules {
			if r.mentions(ipnet, bridge) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// removeCellIptables deletes the rules mentioning the cell, then every user chain they
// jumped to that nothing else references any more (flushed first), recursively.
func removeCellIptables(ctx context.Context, subnet, bridge string) error {
	_, ipnet, err := net.ParseCIDR(subnet)
	if err != nil {
		return fmt.Errorf("subnet %q: %w", subnet, err)
	}
	var errs []error
	for _, table := range iptablesTables {
		st, err := readIptables(ctx, table)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var orphans []string
		for _, r := range st.rules {
			if !r.mentions(ipnet, bridge) {
				continue
			}
			if t := r.target(); st.chains[t] {
				orphans = append(orphans, t)
			}
			errs = append(errs, iptables(ctx, append([]string{"-t", table, "-D", r.Chain}, r.Args...)...))
		}
		errs = append(errs, removeOrphanChains(ctx, table, orphans))
	}
	return errors.Join(errs...)
}

// removeOrphanChains flushes and deletes each chain no rule of another chain jumps to,
// then the chains those jumped to, and so on.
func removeOrphanChains(ctx context.Context, table string, chains []string) error {
	var errs []error
	for len(chains) > 0 {
		// Several removed chains may jump to the same one (e.g. CNI-HOSTPORT-SETMARK):
		// each chain goes once.
		slices.Sort(chains)
		chains = slices.Compact(chains)
		st, err := readIptables(ctx, table)
		if err != nil {
			return err
		}
		var next []string
		for _, chain := range chains {
			if !st.chains[chain] || referenced(st, chain) {
				continue
			}
			for _, r := range st.rules {
				if t := r.target(); r.Chain == chain && st.chains[t] && t != chain {
					next = append(next, t)
				}
			}
			errs = append(errs, iptables(ctx, "-t", table, "-F", chain), iptables(ctx, "-t", table, "-X", chain))
		}
		chains = next
	}
	return errors.Join(errs...)
}

func referenced(st iptablesState, chain string) bool {
	return slices.ContainsFunc(st.rules, func(r iptablesRule) bool { return r.Chain != chain && r.target() == chain })
}

func iptables(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// bridgePorts lists the interfaces (veths) attached to bridge; none when it is gone.
func bridgePorts(bridge string) []string {
	entries, err := os.ReadDir(filepath.Join("/sys/class/net", bridge, "brif"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// removeBridge deletes the veths on bridge and the bridge itself.
func removeBridge(ctx context.Context, bridge string) error {
	var errs []error
	for _, port := range bridgePorts(bridge) {
		errs = append(errs, deleteLink(ctx, port))
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err == nil {
		errs = append(errs, deleteLink(ctx, bridge))
	}
	return errors.Join(errs...)
}

func deleteLink(ctx context.Context, name string) error {
	out, err := exec.CommandContext(ctx, "ip", "link", "del", name).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Cannot find device") {
		return fmt.Errorf("ip link del %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountPath(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount at or below dir.
func unmountUnder(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mounts {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

// netnsFiles lists the files in every directory named netns below dir.
func netnsFiles(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // a vanishing or unreadable entry is not a leftover we can name
		}
		if !d.IsDir() && filepath.Base(filepath.Dir(path)) == "netns" {
			out = append(out, path)
		}
		return nil
	})
	return out
}
