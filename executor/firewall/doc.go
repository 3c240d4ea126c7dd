// Package firewall enforces a container's egress rules (the LRP API's egress_rules) as
// nftables rules, default deny.
//
// Each cell owns one inet table (Config.Table). Its forward and input base chains send
// every IPv4 packet that arrives from the cell's bridge, by source address, through a
// verdict map to that container's own chain; anything else from the bridge is rejected.
// A container's chain accepts replies (established/related) and traffic to the container
// itself, then its rules in reverse order (the last rule takes precedence, so its log flag
// decides), and rejects the rest. Each change is one atomic netlink batch, and every
// container's rules are recorded under Config.StateDir so that a restarted executor
// rebuilds the table exactly (Restore).
//
// The translation from rules to nftables expressions (Parse, Compile) is pure.
package firewall
