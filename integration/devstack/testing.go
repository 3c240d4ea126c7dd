package devstack

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	auctioneerconfig "drover.dev/auctioneer/config"
	"drover.dev/bbs/client"
	bbsconfig "drover.dev/bbs/config"
	"drover.dev/bbs/store/storetest"
	convergerconfig "drover.dev/converger/config"
	repconfig "drover.dev/rep/config"
	reconfig "drover.dev/route-emitter/config"

	"drover.dev/integration/router"
	"drover.dev/lib/handover"
	"drover.dev/lib/testenv"
)

// TestOptions shape a test stack.
type TestOptions struct {
	// Replicas is the number of BBS processes sharing the database (default 1).
	Replicas int
	// Configure may change replica i's configuration before it starts.
	Configure func(i int, c *bbsconfig.Config)
	// Cells is the number of cells (reps in the shared private containerd, see
	// testCellLayouts), with one auctioneer. 0 (the default) starts neither, so that
	// BBS-only tests need no containerd.
	Cells int
	// ConfigureRep may change the rep configuration of cell i (1-based) before it starts.
	ConfigureRep func(i int, c *repconfig.Config)
	// ConfigureAuctioneer may change the auctioneer's configuration before it starts.
	ConfigureAuctioneer func(c *auctioneerconfig.Config)
	// ConfigureConverger, when set, starts a converger (every TestConvergeInterval,
	// started last) after letting it change its configuration; nil runs no converger.
	ConfigureConverger func(c *convergerconfig.Config)
	// Fileserver, when true, starts a fileserver on free ports (with the builder
	// bundles and a signing key under the test's home).
	Fileserver bool
	// Routing, when set, starts an embedded NATS on a free port, the stand-in router
	// and the route-emitter (started last); nil runs none of them.
	Routing *RoutingOptions
}

// RoutingOptions shape a test stack's routing side.
type RoutingOptions struct {
	// ConfigureRouteEmitter may change the route-emitter's configuration before it starts.
	ConfigureRouteEmitter func(c *reconfig.Config)
	// ConfigureRouter may change the stand-in router's configuration (its register
	// interval is TestRegisterInterval) before it starts.
	ConfigureRouter func(c *router.Config)
}

// TestRegisterInterval is the register interval a test stack's router asks for.
const TestRegisterInterval = 2 * time.Second

// testDatabaseConnections caps each test BBS's pool: many run at once on one Postgres.
const testDatabaseConnections = 10

// builds compile each set of binaries once per test process.
var builds = struct {
	bbs, cells, converger, routing, fileserver buildOnce
}{}

type buildOnce struct {
	once sync.Once
	err  error
}

func (b *buildOnce) do(root, binDir string, binaries ...Binary) error {
	b.once.Do(func() { b.err = Build(context.Background(), root, binDir, binaries...) })
	return b.err
}

// NewTest starts a stack private to the test: a temporary home, a fresh database on the
// scripts/postgres.sh server (storetest.NewDatabase), new certificates, reserved ports, and
// Replicas BBS processes that die with the test process. Everything is stopped and
// removed by t.Cleanup, after logging the BBS logs when the test failed.
func NewTest(t testing.TB, opts TestOptions) *Stack {
	t.Helper()
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{
		Root:   root,
		Home:   t.TempDir(),
		BinDir: BinDir(root),
	}
	s.Certs = Certs{Dir: filepath.Join(s.Home, "certs")}
	s.DatabaseURL = storetest.NewDatabase(t) // first: without Postgres the test is skipped
	if err := builds.bbs.do(root, s.BinDir, BBSBinary); err != nil {
		t.Fatal(err)
	}
	passphrase, err := newPassphrase()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	for i := range opts.Replicas {
		ports, reserved := reservePorts(t, 3)
		b := s.newBBS(i, Ports{GRPC: ports[0], HTTP: ports[1], Debug: ports[2]}, passphrase, false)
		b.reserved = reserved
		b.Config.LogLevel = "debug"
		b.Config.MaxDatabaseConnections = testDatabaseConnections
		if opts.Configure != nil {
			opts.Configure(i, &b.Config)
		}
		s.BBS = append(s.BBS, b)
	}
	if opts.Cells > 0 {
		s.addTestCells(t, opts)
	}
	if opts.ConfigureConverger != nil {
		s.addTestConverger(t, opts)
	}
	if opts.Routing != nil {
		s.addTestRouting(t, *opts.Routing)
	}
	if opts.Fileserver {
		s.addTestFileserver(t)
	}
	if err := s.prepareFiles(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, svc := range s.services() {
				t.Logf("%s logs:\n%s", svc.Name, svc.LogTail(60))
			}
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("stop test stack: %v", err)
		}
	})
	if err := s.startAll(t.Context(), t.Logf); err != nil {
		t.Fatal(err)
	}
	return s
}

// addTestCells describes the auctioneer and opts.Cells reps on reserved ports, in the
// shared containerd, with per-test namespaces, bridges, subnets and host ports. Without
// root or containerd the test is skipped (testenv.Missing).
func (s *Stack) addTestCells(t testing.TB, opts TestOptions) {
	t.Helper()
	testenv.RequireRoot(t, "cells run containers in containerd and create networks")
	var err error
	if s.Containerd, err = SharedContainerd(t.Context(), s.Root); err != nil {
		testenv.Missing(t, "containerd", err.Error())
	}
	if err := builds.cells.do(s.Root, s.BinDir, AuctioneerBinary, RepBinary); err != nil {
		t.Fatal(err)
	}
	ports, reserved := reservePorts(t, 2+2*opts.Cells)
	layouts, err := testCellLayouts(opts.Cells, ports[2:])
	if err != nil {
		t.Fatal(err)
	}
	s.addCells(layouts, AuctioneerPorts{GRPC: ports[0], Debug: ports[1]}, false)
	s.Auctioneer.reserved = reserved[:2]
	for i, r := range s.Reps { // in the order of layouts
		r.reserved = reserved[2+2*i : 4+2*i]
	}
	s.Auctioneer.Config.LogLevel = "debug"
	if opts.ConfigureAuctioneer != nil {
		opts.ConfigureAuctioneer(&s.Auctioneer.Config)
	}
	for i, r := range s.Reps {
		r.Config.LogLevel = "debug"
		if opts.ConfigureRep != nil {
			opts.ConfigureRep(i+1, &r.Config)
		}
	}
}

// addTestConverger describes a converger on a free port, configured by opts.
func (s *Stack) addTestConverger(t testing.TB, opts TestOptions) {
	t.Helper()
	if err := builds.converger.do(s.Root, s.BinDir, ConvergerBinary); err != nil {
		t.Fatal(err)
	}
	ports, reserved := reservePorts(t, 1)
	s.Converger = s.newConverger(ports[0], s.BBS[0].GRPCAddress(), TestConvergeInterval, false)
	s.Converger.reserved = reserved
	s.Converger.Config.LogLevel = "debug"
	opts.ConfigureConverger(&s.Converger.Config)
}

// addTestRouting starts an embedded NATS on a free port (shut down by Stop), with its
// users' passwords in the test's home, and describes the router and the route-emitter
// on free ports.
func (s *Stack) addTestRouting(t testing.TB, opts RoutingOptions) {
	t.Helper()
	if err := builds.routing.do(s.Root, s.BinDir, RouteEmitterBinary, StandinRouterBinary); err != nil {
		t.Fatal(err)
	}
	nats, err := startEmbeddedNATS(s.Home)
	if err != nil {
		t.Fatal(err)
	}
	s.NATS = nats
	t.Cleanup(nats.Shutdown)
	ports, reserved := reservePorts(t, 4)
	s.addRouting(RouteEmitterPorts{GRPC: ports[0], Debug: ports[1]}, RouterPorts{HTTP: ports[2], Admin: ports[3]}, TestRegisterInterval, false)
	s.RouteEmitter.reserved, s.Router.reserved = reserved[:2], reserved[2:]
	s.RouteEmitter.Config.LogLevel = "debug"
	s.Router.Config.LogLevel = "debug"
	if opts.ConfigureRouteEmitter != nil {
		opts.ConfigureRouteEmitter(&s.RouteEmitter.Config)
	}
	if opts.ConfigureRouter != nil {
		opts.ConfigureRouter(&s.Router.Config)
	}
}

// services lists every process of the stack.
func (s *Stack) services() []*Service {
	var out []*Service
	for _, b := range s.BBS {
		out = append(out, &b.Service)
	}
	if s.Auctioneer != nil {
		out = append(out, &s.Auctioneer.Service)
	}
	for _, r := range s.Reps {
		out = append(out, &r.Service)
	}
	if s.Converger != nil {
		out = append(out, &s.Converger.Service)
	}
	if s.Router != nil {
		out = append(out, &s.Router.Service)
	}
	if s.RouteEmitter != nil {
		out = append(out, &s.RouteEmitter.Service)
	}
	if s.Fileserver != nil {
		out = append(out, &s.Fileserver.Service)
	}
	return out
}

// Client returns a BBS client of replica i, closed when the test ends.
func (s *Stack) Client(t testing.TB, i int) *client.Client {
	t.Helper()
	c, err := s.Dial(i)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// reservePorts reserves n distinct ports on 127.0.0.1 (lib/handover): their listeners
// stay open until the services they are given to (Service.reserved) start, so that no
// other process can take them in between; those left over are released when the test
// ends.
func reservePorts(t testing.TB, n int) ([]int, []*handover.Reservation) {
	t.Helper()
	ports := make([]int, 0, n)
	reserved := make([]*handover.Reservation, 0, n)
	for range n {
		r, err := handover.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		ports = append(ports, r.Port())
		reserved = append(reserved, r)
	}
	return ports, reserved
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment ago, for
// servers a test cannot hand a listener to (Postgres and NATS of the scripts, a detached
// stack): another process may take one before they bind it.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// addTestFileserver describes a fileserver on free ports.
func (s *Stack) addTestFileserver(t testing.TB) {
	t.Helper()
	if err := builds.fileserver.do(s.Root, s.BinDir, FileserverBinary); err != nil {
		t.Fatal(err)
	}
	ports, reserved := reservePorts(t, 2)
	s.Fileserver = s.newFileserver(FileserverPorts{HTTP: ports[0], Debug: ports[1]}, false)
	s.Fileserver.reserved = reserved
	s.Fileserver.Config.LogLevel = "debug"
}
