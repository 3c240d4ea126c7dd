// Package network gives each container of a cell its own network namespace, attached to
// the cell's Linux bridge through the CNI plugins (bridge with host-local IPAM, portmap),
// with every requested container port mapped to a host port from the cell's range.
//
// Everything a Manager creates lives under its Config.StateDir (netns files, IPAM data,
// the CNI result cache and one allocation record per container) or is keyed by the
// cell's bridge name (the CNI network name), so several cells can share one machine. The
// records let a restarted Manager find, look up and prune what an earlier one left.
// RemoveCell tears a whole cell's network down (attachments, bridge, the iptables rules
// naming it) when the cell goes away for good; CellLeftovers lists what remains of it.
package network
