package devstack

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"strconv"
	"time"

	auctioneerconfig "drover.dev/auctioneer/config"
	libconfig "drover.dev/lib/config"
	repconfig "drover.dev/rep/config"
)

// Cell layout of the dev stack: cell i (1-based) is cell-i in zone z1, z2, z3, z1, ...
// (round-robin), listens on RepPort+CellPortStride*(i-1) (debug one above), has the
// containerd namespace drover-cell-i, the bridge drover-ci on 10.88.i.0/24 and the host
// ports 61000+1000*(i-1) .. +999.
const (
	// DefaultRepPort is the gRPC port of cell-1's rep.
	DefaultRepPort = 1800
	// CellPortStride separates the ports of successive reps.
	CellPortStride = 10
	// MaxDevCells is how many cells fit the dev stack's host port ranges.
	MaxDevCells       = 4
	devHostPortBase   = 61000
	devHostPortStride = 1000
	// testHostPortBlock is the size of a test cell's host port range.
	testHostPortBlock = 100
	// zones is the number of zones cells are spread over.
	zones = 3
)

// AuctioneerPorts are the auctioneer's listening ports.
type AuctioneerPorts struct {
	GRPC, Debug int
}

// DefaultAuctioneerPorts are the dev stack's auctioneer ports.
var DefaultAuctioneerPorts = AuctioneerPorts{GRPC: 9016, Debug: 9017}

// cellLayout is what distinguishes one cell of a stack from the others and from the
// cells of other stacks on the same machine.
type cellLayout struct {
	ID, Zone, Namespace, Bridge, Subnet string
	ListenPort, DebugPort               int
	HostPortStart, HostPortEnd          int
}

// devCellLayout is cell i (1-based) of the dev stack whose first rep listens on repPort.
func devCellLayout(i, repPort int) cellLayout {
	id := "cell-" + strconv.Itoa(i)
	start := devHostPortBase + devHostPortStride*(i-1)
	return cellLayout{
		ID:            id,
		Zone:          zoneOf(i),
		Namespace:     "drover-" + id,
		Bridge:        "drover-c" + strconv.Itoa(i),
		Subnet:        fmt.Sprintf("10.88.%d.0/24", i),
		ListenPort:    repPort + CellPortStride*(i-1),
		DebugPort:     repPort + CellPortStride*(i-1) + 1,
		HostPortStart: start,
		HostPortEnd:   start + devHostPortStride - 1,
	}
}

// testCellLayouts are n cells for one test: a random stack id names the namespaces
// (drover-t<id>-cell-i) and bridges (drt<id>c<i>), each cell gets a random /24 in
// 10.200.0.0-10.254.255.0 that no host interface uses and a random block of host ports
// in 20000-32767 (below Linux's ephemeral range).
func testCellLayouts(n int, ports []int) ([]cellLayout, error) {
	stackID, err := randomHex(3)
	if err != nil {
		return nil, err
	}
	used, err := hostSubnets()
	if err != nil {
		return nil, err
	}
	blocks := (32767 - 20000 + 1) / testHostPortBlock
	first, err := randomInt(blocks)
	if err != nil {
		return nil, err
	}
	var out []cellLayout
	for i := 1; i <= n; i++ {
		subnet, err := randomSubnet(used)
		if err != nil {
			return nil, err
		}
		used[subnet] = true
		start := 20000 + ((first+i-1)%blocks)*testHostPortBlock
		id := "cell-" + strconv.Itoa(i)
		out = append(out, cellLayout{
			ID:            id,
			Zone:          zoneOf(i),
			Namespace:     "drover-t" + stackID + "-" + id,
			Bridge:        "drt" + stackID + "c" + strconv.Itoa(i),
			Subnet:        subnet,
			ListenPort:    ports[2*(i-1)],
			DebugPort:     ports[2*(i-1)+1],
			HostPortStart: start,
			HostPortEnd:   start + testHostPortBlock - 1,
		})
	}
	return out, nil
}

// zoneOf is the zone of cell i: z1, z2, z3, z1, ...
func zoneOf(i int) string { return "z" + strconv.Itoa((i-1)%zones+1) }

// newRep describes the rep of one cell.
func (s *Stack) newRep(l cellLayout, bbsAddress string, detached bool) *Rep {
	name := "rep-" + l.ID
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	r := &Rep{Certs: s.Certs}
	s.describe(&r.Service, name, RepBinary, detached)
	cfg := repconfig.Default()
	cfg.CellID = l.ID
	cfg.Zone = l.Zone
	cfg.ListenAddress = addr(l.ListenPort)
	cfg.DebugAddress = addr(l.DebugPort)
	cfg.BBSAddress = bbsAddress
	cfg.TLS = s.Certs.Rep(l.ID)
	cfg.PreloadedRootFSes = map[string]string{"busybox": s.BusyboxImage()}
	cfg.Executor.StateDir = filepath.Join(r.Dir, "state")
	cfg.Executor.ContainerdSocket = s.Containerd.Socket
	cfg.Executor.ContainerdNamespace = l.Namespace
	cfg.Executor.ExternalIP = "127.0.0.1"
	cfg.Executor.PortRangeStart = l.HostPortStart
	cfg.Executor.PortRangeEnd = l.HostPortEnd
	cfg.Executor.Subnet = l.Subnet
	cfg.Executor.BridgeName = l.Bridge
	// A dev drain re-checks its containers every second instead of every 10 s.
	cfg.EvacuationPollingInterval = libconfig.Duration(time.Second)
	r.Config = cfg
	return r
}

// newAuctioneer describes the stack's auctioneer.
func (s *Stack) newAuctioneer(ports AuctioneerPorts, bbsAddress string, detached bool) *Auctioneer {
	cfg := auctioneerconfig.Default()
	cfg.ListenAddress = "127.0.0.1:" + strconv.Itoa(ports.GRPC)
	cfg.DebugAddress = "127.0.0.1:" + strconv.Itoa(ports.Debug)
	cfg.BBSAddress = bbsAddress
	cfg.TLS = s.Certs.Auctioneer()
	a := &Auctioneer{Config: cfg, Certs: s.Certs}
	s.describe(&a.Service, "auctioneer", AuctioneerBinary, detached)
	return a
}

// describe fills in svc as the program b of the stack, living in Home/name.
func (s *Stack) describe(svc *Service, name string, b Binary, detached bool) {
	svc.Name = name
	svc.Dir = filepath.Join(s.Home, name)
	svc.Binary = filepath.Join(s.BinDir, b.Name)
	svc.Detached = detached
}

// BusyboxImage is the OCI image tarball every cell preloads as preloaded:busybox.
func (s *Stack) BusyboxImage() string { return filepath.Join(s.Home, "rootfs", "busybox.tar") }

// hostSubnets returns the /24 networks of the host's IPv4 addresses.
func hostSubnets() (map[string]bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("host addresses: %w", err)
	}
	used := map[string]bool{}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok {
			if ip4 := ipnet.IP.To4(); ip4 != nil {
				used[fmt.Sprintf("%d.%d.%d.0/24", ip4[0], ip4[1], ip4[2])] = true
			}
		}
	}
	return used, nil
}

// randomSubnet picks a /24 in 10.200.0.0-10.254.255.0 that is not in used.
func randomSubnet(used map[string]bool) (string, error) {
	for range 100 {
		n, err := randomInt(55 * 256)
		if err != nil {
			return "", err
		}
		subnet := fmt.Sprintf("10.%d.%d.0/24", 200+n/256, n%256)
		if !used[subnet] {
			return subnet, nil
		}
	}
	return "", fmt.Errorf("no free test subnet found")
}

func randomInt(n int) (int, error) {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("random: %w", err)
	}
	return int(v.Int64()), nil
}

func randomHex(bytes int) (string, error) {
	b := make([]byte, bytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
