package network

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/coreos/go-iptables/iptables"
)

// cellTables are the iptables tables the bridge and portmap plugins write to.
var cellTables = []string{"nat", "filter", "mangle"}

// rule is one rule of an iptables chain: its line as `iptables -S` prints it
// ("-A CHAIN ...") and that line split into the chain and the rule's arguments.
type rule struct {
	table, chain string
	args         []string
	line         string
}

// String is the rule as `iptables -t TABLE -S` prints it, with its table.
func (r rule) String() string { return "-t " + r.table + " " + r.line }

// target is the chain the rule jumps or goes to, "" when none.
func (r rule) target() string {
	for i, a := range r.args {
		if (a == "-j" || a == "-g") && i+1 < len(r.args) {
			return r.args[i+1]
		}
	}
	return ""
}

// mentions reports whether the rule names an address in subnet, the cell's bridge or
// the cell's CNI network (in the comments the CNI plugins give their rules).
func (r rule) mentions(subnet *net.IPNet, bridge string) bool {
	network := networkName(bridge)
	for _, a := range r.args {
		if a == bridge || strings.Contains(a, `"`+network+`"`) || namesUnquoted(a, network) {
			return true
		}
		addr, _, _ := strings.Cut(a, "/")
		if ip := net.ParseIP(addr); ip != nil && subnet.Contains(ip) {
			return true
		}
	}
	return false
}

// namesUnquoted reports whether comment holds "name: NETWORK" followed by a space or
// its end (not by more of a longer network's name).
func namesUnquoted(comment, network string) bool {
	for rest := comment; ; {
		_, after, found := strings.Cut(rest, "name: "+network)
		if !found {
			return false
		}
		if after == "" || after[0] == ' ' {
			return true
		}
		rest = after
	}
}

// table is one iptables table: its user-defined chains and the rules of all its chains.
type table struct {
	name       string
	userChains map[string]bool
	rules      []rule
}

// readTable lists every chain of the table named name and their rules. A chain iptables
// no longer lists by itself is skipped: it was removed while the table was read (the
// nf_tables backend then calls it "incompatible"), or is one iptables cannot handle.
func readTable(ipt *iptables.IPTables, name string) (table, error) {
	chains, err := ipt.ListChains(name)
	if err != nil {
		return table{}, fmt.Errorf("list iptables chains of %s: %w", name, err)
	}
	t := table{name: name, userChains: map[string]bool{}}
	for _, chain := range chains {
		lines, err := ipt.List(name, chain)
		if err != nil {
			if exists, existsErr := ipt.ChainExists(name, chain); existsErr == nil && !exists {
				continue
			}
		}
		if err != nil {
			return table{}, fmt.Errorf("list iptables chain %s of %s: %w", chain, name, err)
		}
		for _, line := range lines {
			switch {
			case line == "-N "+chain:
				t.userChains[chain] = true
			case strings.HasPrefix(line, "-A "):
				args := splitRuleArgs(strings.TrimPrefix(line, "-A "))
				if len(args) > 0 {
					t.rules = append(t.rules, rule{table: name, chain: args[0], args: args[1:], line: line})
				}
			}
		}
	}
	return t, nil
}

// referenced reports whether a rule of another chain jumps or goes to chain.
func (t table) referenced(chain string) bool {
	return slices.ContainsFunc(t.rules, func(r rule) bool { return r.chain != chain && r.target() == chain })
}

// cellRules lists the rules, in every table the CNI plugins write to, that name the
// cell's subnet, bridge or CNI network.
func cellRules(ipt *iptables.IPTables, subnet *net.IPNet, bridge string) ([]rule, error) {
	var out []rule
	for _, name := range cellTables {
		t, err := readTable(ipt, name)
		if err != nil {
			return nil, err
		}
		for _, r := range t.rules {
			if r.mentions(subnet, bridge) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// removeCellRules deletes the rules naming the cell's subnet, bridge or CNI network, then
// every user chain they jumped to that no other rule references any more (flushed first),
// and the chains those jumped to, and so on. A rule or chain gone meanwhile is no error.
func removeCellRules(ipt *iptables.IPTables, subnet *net.IPNet, bridge string) error {
	var errs []error
	for _, name := range cellTables {
		t, err := readTable(ipt, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var orphans []string
		for _, r := range t.rules {
			if !r.mentions(subnet, bridge) {
				continue
			}
			if target := r.target(); t.userChains[target] {
				orphans = append(orphans, target)
			}
			if err := ipt.Delete(r.table, r.chain, r.args...); err != nil && !isNotExist(err) {
				errs = append(errs, fmt.Errorf("delete iptables rule %s: %w", r, err))
			}
		}
		errs = append(errs, removeOrphanChains(ipt, name, orphans))
	}
	return errors.Join(errs...)
}

// removeOrphanChains flushes and deletes each of chains that no rule of another chain
// references, then does the same for the chains those jumped to.
func removeOrphanChains(ipt *iptables.IPTables, name string, chains []string) error {
	var errs []error
	for len(chains) > 0 {
		// Several removed chains may jump to the same one (e.g. CNI-HOSTPORT-SETMARK):
		// each chain goes once.
		slices.Sort(chains)
		chains = slices.Compact(chains)
		t, err := readTable(ipt, name)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		var next []string
		for _, chain := range chains {
			if !t.userChains[chain] || t.referenced(chain) {
				continue
			}
			for _, r := range t.rules {
				if target := r.target(); r.chain == chain && t.userChains[target] && target != chain {
					next = append(next, target)
				}
			}
			if err := ipt.ClearAndDeleteChain(name, chain); err != nil && !isNotExist(err) {
				errs = append(errs, fmt.Errorf("delete iptables chain %s of %s: %w", chain, name, err))
			}
		}
		chains = next
	}
	return errors.Join(errs...)
}

// isNotExist reports whether err is iptables saying the rule or chain is not there.
func isNotExist(err error) bool {
	var e *iptables.Error
	return errors.As(err, &e) && e.IsNotExist()
}

// splitRuleArgs splits a rule as iptables prints it into arguments, honouring its
// double quotes and backslash escapes (a comment is printed as "dnat name: \"x\"").
func splitRuleArgs(s string) []string {
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
