package devstack

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// A multi-host stack (Options.Hosts, devstacktest.Options.Hosts) runs on a private test
// network on this machine: a Linux bridge in the root network namespace holding the
// gateway address .1 of a /24 taken from 10.213.0.0/16, and one network namespace ("test
// host") per role, each joined to the bridge by a veth whose inner end is eth0 with the
// host's own address. The roles and their addresses:
//
//	control  .2       Postgres, BBS, auctioneer, converger, route-emitter, fileserver, registries
//	router   .3       NATS and the stand-in router
//	client   .4       nothing: tests send their traffic from it
//	cell-i   .10+i    the rep of cell i (containerd is shared and stays in the root namespace)
const (
	// HostControl, HostRouter and HostClient are the names of the fixed test hosts; a
	// cell's host is named after its cell id (CellHostName).
	HostControl = "control"
	HostRouter  = "router"
	HostClient  = "client"
	// hostSubnetBase is the first /24 of the test networks: 10.213.N.0/24 for N in 0..255.
	hostSubnetBase = "10.213.0.0"
	// MaxHosts is the most cell hosts a test network holds.
	MaxHosts = 200
	// hostIDLength is the length of a HostNetwork's id (lowercase hex digits).
	hostIDLength = 6
)

// HostNetwork is a stack's test network: the bridge, its subnet and the test hosts on it.
// It is stored in the stack's state so that `down` removes it from any process.
type HostNetwork struct {
	// ID names every interface and namespace of the network (drh<ID>..., drover-<ID>-...).
	ID string `json:"id"`
	// Bridge is the Linux bridge in the root network namespace.
	Bridge string `json:"bridge"`
	// Subnet is 10.213.N.0/24.
	Subnet string `json:"subnet"`
	// Gateway is the bridge's address (.1): the root namespace (the test process, the
	// shared containerd) reaches the hosts through it.
	Gateway string `json:"gateway"`
	// Hosts are the test hosts: control, router, client, then cell-1, cell-2, ...
	Hosts []Host `json:"hosts"`
}

// Host is one test host: a network namespace with one address on the test network.
type Host struct {
	// Name is the role: control, router, client or the cell id.
	Name string `json:"name"`
	// Netns is the namespace's name (its file is /run/netns/<Netns>).
	Netns string `json:"netns"`
	// IP is the host's address on the test network.
	IP string `json:"ip"`
	// Veth is the root namespace's end of the host's veth (on the bridge); its peer in
	// the namespace is eth0.
	Veth string `json:"veth"`
}

// CellHostName is the name of the test host of cell i (1-based): its cell id.
func CellHostName(i int) string { return "cell-" + strconv.Itoa(i) }

// PlanHostNetwork lays out a test network with id (hostIDLength lowercase hex digits) and
// cells cell hosts on the first 10.213.N.0/24 that overlaps none of used (the machine's
// addresses and routes).
func PlanHostNetwork(id string, cells int, used []netip.Prefix) (HostNetwork, error) {
	var errs []error
	if err := validHostID(id); err != nil {
		errs = append(errs, err)
	}
	if cells < 1 || cells > MaxHosts {
		errs = append(errs, fmt.Errorf("hosts: the number of cell hosts must be between 1 and %d, got %d", MaxHosts, cells))
	}
	if len(errs) > 0 {
		return HostNetwork{}, errors.Join(errs...)
	}
	subnet, err := freeHostSubnet(used)
	if err != nil {
		return HostNetwork{}, err
	}
	base := subnet.Addr().As4()
	ip := func(last int) string {
		a := base
		a[3] = byte(last)
		return netip.AddrFrom4(a).String()
	}
	n := HostNetwork{ID: id, Bridge: "drh" + id, Subnet: subnet.String(), Gateway: ip(1)}
	add := func(name string, last int) {
		n.Hosts = append(n.Hosts, Host{
			Name:  name,
			Netns: "drover-" + id + "-" + name,
			IP:    ip(last),
			Veth:  "drh" + id + strconv.Itoa(len(n.Hosts)),
		})
	}
	add(HostControl, 2)
	add(HostRouter, 3)
	add(HostClient, 4)
	for i := 1; i <= cells; i++ {
		add(CellHostName(i), 10+i)
	}
	return n, nil
}

// freeHostSubnet is the first 10.213.N.0/24 overlapping none of used.
func freeHostSubnet(used []netip.Prefix) (netip.Prefix, error) {
	base := netip.MustParseAddr(hostSubnetBase).As4()
	for n := range 256 {
		a := base
		a[2] = byte(n)
		candidate := netip.PrefixFrom(netip.AddrFrom4(a), 24)
		free := true
		for _, u := range used {
			if u.Overlaps(candidate) && u.Bits() > 0 { // a default route overlaps everything
				free = false
				break
			}
		}
		if free {
			return candidate, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("hosts: every 10.213.N.0/24 is in use on this machine")
}

// validHostID refuses an id that could not name interfaces (at most 15 bytes).
func validHostID(id string) error {
	if len(id) != hostIDLength {
		return fmt.Errorf("hosts: id %q must be %d lowercase hex digits", id, hostIDLength)
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("hosts: id %q must be %d lowercase hex digits", id, hostIDLength)
		}
	}
	return nil
}

// Host returns the test host called name, or nil.
func (n *HostNetwork) Host(name string) *Host {
	for i := range n.Hosts {
		if n.Hosts[i].Name == name {
			return &n.Hosts[i]
		}
	}
	return nil
}

// NetnsPath is the file of the host's network namespace.
func (h Host) NetnsPath() string { return NetnsPath(h.Netns) }

// NetnsPath is the file of the named network namespace (as `ip netns` keeps it).
func NetnsPath(name string) string { return "/run/netns/" + name }
