package devstack

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	auctioneerconfig "drover.dev/auctioneer/config"
	"drover.dev/executor"
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
	// zones is the number of zones cells are spread over.
	zones = 3
)

// AuctioneerPorts are the auctioneer's listening ports.
type AuctioneerPorts struct {
	GRPC, Debug int
}

// DefaultAuctioneerPorts are the dev stack's auctioneer ports.
var DefaultAuctioneerPorts = AuctioneerPorts{GRPC: 9016, Debug: 9017}

// CellLayout is what distinguishes one cell of a stack from the others and from the
// cells of other stacks on the same machine: its id and zone, its containerd namespace,
// its bridge and subnet, its rep's ports and its range of host ports.
type CellLayout struct {
	ID, Zone, Namespace, Bridge, Subnet string
	ListenPort, DebugPort               int
	HostPortStart, HostPortEnd          int
}

// devCellLayout is cell i (1-based) of the dev stack whose first rep listens on repPort.
func devCellLayout(i, repPort int) CellLayout {
	id := "cell-" + strconv.Itoa(i)
	start := devHostPortBase + devHostPortStride*(i-1)
	return CellLayout{
		ID:            id,
		Zone:          CellZone(i),
		Namespace:     "drover-" + id,
		Bridge:        "drover-c" + strconv.Itoa(i),
		Subnet:        fmt.Sprintf("10.88.%d.0/24", i),
		ListenPort:    repPort + CellPortStride*(i-1),
		DebugPort:     repPort + CellPortStride*(i-1) + 1,
		HostPortStart: start,
		HostPortEnd:   start + devHostPortStride - 1,
	}
}

// CellZone is the zone of cell i (1-based): z1, z2, z3, z1, ...
func CellZone(i int) string { return "z" + strconv.Itoa((i-1)%zones+1) }

// newRep describes the rep of one cell; with registries (AddRegistries, called first)
// its executor pulls docker:///REPO from the plain one and trusts the dev CA.
func (s *Stack) newRep(l CellLayout, bbsAddress string, detached bool) *Rep {
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
	for name, image := range s.StackImages {
		cfg.PreloadedRootFSes[name] = image
	}
	cfg.Executor.StateDir = filepath.Join(r.Dir, "state")
	cfg.Executor.ContainerdSocket = s.Containerd.Socket
	cfg.Executor.ContainerdNamespace = l.Namespace
	cfg.Executor.ExternalIP = "127.0.0.1"
	cfg.Executor.PortRangeStart = l.HostPortStart
	cfg.Executor.PortRangeEnd = l.HostPortEnd
	cfg.Executor.Subnet = l.Subnet
	cfg.Executor.BridgeName = l.Bridge
	cfg.Executor.UserNamespace = CellUserNamespace(l)
	// A dev drain re-checks its containers every second instead of every 10 s.
	cfg.EvacuationPollingInterval = libconfig.Duration(time.Second)
	if rs := s.Registry; rs != nil {
		// docker:///REPO pulls from the plain dev registry; the TLS one is trusted
		// through the dev CA.
		cfg.Executor.DefaultRegistry = rs.Plain.Host()
		cfg.Executor.InsecureRegistries = []string{rs.Plain.Host()}
		cfg.Executor.RegistryCAFile = s.Certs.CAFile()
	}
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

// cellIDRangeBase is the first host uid/gid of the cells' user namespaces: above the
// ids a Debian host hands out (and below 2^32 for every host port range).
const cellIDRangeBase = 1 << 20

// CellUserNamespace is the id range of a cell's unprivileged containers: 65536 ids from
// 2^20 + (its first host port / 100)·65536, so that two cells of this machine (dev or
// test stacks, whose host port ranges never overlap within a stack and are 100-port
// blocks) never share host ids.
func CellUserNamespace(l CellLayout) *executor.UserNamespace {
	first := int64(cellIDRangeBase) + int64(l.HostPortStart/100)*executor.MinUserNamespaceSize
	return &executor.UserNamespace{HostUID: first, HostGID: first, Size: executor.MinUserNamespaceSize}
}
