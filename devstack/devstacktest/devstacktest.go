// Package devstacktest starts a drover stack (package devstack) private to one test or
// benchmark: a temporary home, a fresh database on the scripts/postgres.sh server, new
// certificates, ports from the OS, and processes that die with the test process, all
// stopped and removed by t.Cleanup even when the test fails. Only tests import it; the
// dev stack's launcher (devstack/cmd/devstack) does not.
package devstacktest

import (
	"context"
	"os"
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
	stagerconfig "drover.dev/stager/config"

	"drover.dev/devstack"
	"drover.dev/devstack/router"
	"drover.dev/lib/handover"
	"drover.dev/lib/testenv"
)

// Options shape a test stack.
type Options struct {
	// Replicas is the number of BBS processes sharing the database (default 1).
	Replicas int
	// Configure may change replica i's configuration before it starts.
	Configure func(i int, c *bbsconfig.Config)
	// Cells is the number of cells (reps in the shared private containerd, see
	// cellLayouts), with one auctioneer. 0 (the default) starts neither, so that
	// BBS-only tests need no containerd.
	Cells int
	// ConfigureRep may change the rep configuration of cell i (1-based) before it starts.
	ConfigureRep func(i int, c *repconfig.Config)
	// ConfigureAuctioneer may change the auctioneer's configuration before it starts.
	ConfigureAuctioneer func(c *auctioneerconfig.Config)
	// ConfigureConverger, when set, starts a converger (every ConvergeInterval, started
	// last) after letting it change its configuration; nil runs no converger.
	ConfigureConverger func(c *convergerconfig.Config)
	// Fileserver, when true, starts a fileserver on free ports (with the builder
	// bundles and a signing key under the test's home).
	Fileserver bool
	// Routing, when set, starts an embedded NATS on a free port, the stand-in router
	// and the route-emitter (started last); nil runs none of them.
	Routing *RoutingOptions
	// Registry, when true, starts the two private registries (devstack.Registries) on
	// free ports, first, with the standard images (devstack/images) pushed into both,
	// and points the cells at them: the plain one is their default registry and listed
	// as insecure, the dev CA is their registry CA, and a pulled image is collected as
	// soon as its last container is gone. Without Debian's docker-registry the test is
	// skipped (testenv.Missing).
	Registry bool
	// Hosts, when positive, starts a multi-host stack instead (see newHosts): that many
	// cells, each on a test host of its own, the control plane, the router and a client
	// host, on a private test network (devstack.HostNetwork, in Stack.Hosts). Cells
	// must then be 0 or Hosts; Replicas and Registry are not supported.
	Hosts int // multihost
	// Stager, when set, starts a stager (and a fileserver) with the tree's buildpacks
	// registered (devstack.RegisterTreeBuildpacks).
	Stager *StagerOptions
}

// StagerOptions shape a test stack's stager.
type StagerOptions struct {
	// Bookworm builds the bookworm stack (scripts/stack.sh, cached) and has every cell
	// preload it, so that the stager stages for it too.
	Bookworm bool
	// Configure may change the stager's configuration before it starts.
	Configure func(c *stagerconfig.Config)
}

// RoutingOptions shape a test stack's routing side.
type RoutingOptions struct {
	// ConfigureRouteEmitter may change the route-emitter's configuration before it starts.
	ConfigureRouteEmitter func(c *reconfig.Config)
	// ConfigureRouter may change the stand-in router's configuration (its register
	// interval is RegisterInterval) before it starts.
	ConfigureRouter func(c *router.Config)
}

// Intervals of a test stack.
const (
	// ConvergeInterval is a test stack's converger repeat_interval.
	ConvergeInterval = time.Second
	// RegisterInterval is the register interval a test stack's router asks for.
	RegisterInterval = 2 * time.Second
)

// databaseConnections caps each test BBS's pool: many run at once on one Postgres.
const databaseConnections = 10

// builds compile each set of binaries once per test process.
var builds = struct {
	bbs, cells, converger, routing, fileserver, stager, lifecycle buildOnce
}{}

// bookworm builds the bookworm stack's image once per test process.
var bookworm struct {
	once  sync.Once
	image string
	err   error
}

type buildOnce struct {
	once sync.Once
	err  error
}

func (b *buildOnce) do(root, binDir string, binaries ...devstack.Binary) error {
	b.once.Do(func() { b.err = devstack.Build(context.Background(), root, binDir, binaries...) })
	return b.err
}

// New starts a stack private to the test: a temporary home, a fresh database on the
// scripts/postgres.sh server (storetest.NewDatabase), new certificates, reserved ports,
// and Replicas BBS processes that die with the test process. Everything is stopped and
// removed by t.Cleanup, after logging the processes' logs when the test failed.
func New(t testing.TB, opts Options) *devstack.Stack {
	t.Helper()
	if opts.Hosts > 0 { // multihost
		return newHosts(t, opts)
	}
	root, err := devstack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	s := &devstack.Stack{
		Root:   root,
		Home:   t.TempDir(),
		BinDir: devstack.BinDir(root),
	}
	s.Certs = devstack.Certs{Dir: filepath.Join(s.Home, "certs")}
	s.DatabaseURL = storetest.NewDatabase(t) // first: without Postgres the test is skipped
	if err := builds.bbs.do(root, s.BinDir, devstack.BBSBinary); err != nil {
		t.Fatal(err)
	}
	passphrase, err := devstack.NewPassphrase()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	for i := range opts.Replicas {
		ports, reserved := reservePorts(t, 3)
		b := s.AddBBS(devstack.Ports{GRPC: ports[0], HTTP: ports[1], Debug: ports[2]}, passphrase, false)
		b.PassListeners(reserved...)
		b.Config.LogLevel = "debug"
		b.Config.MaxDatabaseConnections = databaseConnections
		if opts.Configure != nil {
			opts.Configure(i, &b.Config)
		}
	}
	if opts.Registry {
		addRegistries(t, s)
	}
	if opts.Stager != nil && opts.Stager.Bookworm {
		bookworm.once.Do(func() {
			bookworm.image, bookworm.err = devstack.EnsureStackImage(context.Background(), root, "bookworm")
		})
		if bookworm.err != nil {
			t.Fatal(bookworm.err)
		}
		s.StackImages = map[string]string{"bookworm": bookworm.image}
	}
	if opts.Cells > 0 {
		addCells(t, s, opts)
	}
	if opts.ConfigureConverger != nil {
		addConverger(t, s, opts)
	}
	if opts.Routing != nil {
		addRouting(t, s, *opts.Routing)
	}
	if opts.Fileserver || opts.Stager != nil {
		addFileserver(t, s)
	}
	if opts.Stager != nil {
		addStager(t, s, *opts.Stager)
	}
	if err := s.PrepareFiles(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, svc := range s.Services() {
				t.Logf("%s logs:\n%s", svc.Name, svc.LogTail(60))
			}
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("stop test stack: %v", err)
		}
	})
	if err := s.Start(t.Context(), t.Logf); err != nil {
		t.Fatal(err)
	}
	return s
}

// addCells describes the auctioneer and opts.Cells reps on reserved ports, in the
// shared containerd, with per-test namespaces, bridges, subnets and host ports. Without
// root or containerd the test is skipped (testenv.Missing).
func addCells(t testing.TB, s *devstack.Stack, opts Options) {
	t.Helper()
	testenv.RequireRoot(t, "cells run containers in containerd and create networks")
	var err error
	if s.Containerd, err = devstack.SharedContainerd(t.Context(), s.Root); err != nil {
		testenv.Missing(t, "containerd", err.Error())
	}
	if err := builds.cells.do(s.Root, s.BinDir, devstack.AuctioneerBinary, devstack.RepBinary); err != nil {
		t.Fatal(err)
	}
	ports, reserved := reservePorts(t, 2+2*opts.Cells)
	layouts, err := cellLayouts(opts.Cells, ports[2:])
	if err != nil {
		t.Fatal(err)
	}
	s.AddCells(layouts, devstack.AuctioneerPorts{GRPC: ports[0], Debug: ports[1]}, false)
	s.Auctioneer.PassListeners(reserved[:2]...)
	for i, r := range s.Reps { // in the order of layouts
		r.PassListeners(reserved[2+2*i : 4+2*i]...)
	}
	s.Auctioneer.Config.LogLevel = "debug"
	if opts.ConfigureAuctioneer != nil {
		opts.ConfigureAuctioneer(&s.Auctioneer.Config)
	}
	for i, r := range s.Reps {
		r.Config.LogLevel = "debug"
		if s.Registry != nil {
			r.Config.Executor.ImageGCGrace = 0 // tests see layers collected at once
		}
		if opts.ConfigureRep != nil {
			opts.ConfigureRep(i+1, &r.Config)
		}
	}
}

// addRegistries describes the stack's registries on free ports; each port's reservation
// is closed just before its registry binds it.
func addRegistries(t testing.TB, s *devstack.Stack) {
	t.Helper()
	if _, err := os.Stat(devstack.RegistryBinary); err != nil {
		testenv.Missing(t, "docker-registry", "run scripts/install-deps.sh (Debian package docker-registry)")
	}
	ports, reserved := reservePorts(t, 2)
	rs := s.AddRegistries(devstack.RegistryPorts{Plain: ports[0], TLS: ports[1]}, false)
	rs.Plain.ReleaseBeforeStart(reserved[0])
	rs.Auth.ReleaseBeforeStart(reserved[1])
}

// addConverger describes a converger on a free port, configured by opts.
func addConverger(t testing.TB, s *devstack.Stack, opts Options) {
	t.Helper()
	if err := builds.converger.do(s.Root, s.BinDir, devstack.ConvergerBinary); err != nil {
		t.Fatal(err)
	}
	ports, reserved := reservePorts(t, 1)
	c := s.AddConverger(ports[0], ConvergeInterval, false)
	c.PassListeners(reserved...)
	c.Config.LogLevel = "debug"
	opts.ConfigureConverger(&c.Config)
}

// addRouting starts an embedded NATS on a free port (shut down by Stop and when the
// test ends), with its users' passwords in the test's home, and describes the router
// and the route-emitter on free ports.
func addRouting(t testing.TB, s *devstack.Stack, opts RoutingOptions) {
	t.Helper()
	if err := builds.routing.do(s.Root, s.BinDir, devstack.RouteEmitterBinary, devstack.StandinRouterBinary); err != nil {
		t.Fatal(err)
	}
	nats, err := startNATS(s.Home)
	if err != nil {
		t.Fatal(err)
	}
	s.NATS = nats
	t.Cleanup(nats.Shutdown)
	ports, reserved := reservePorts(t, 4)
	s.AddRouting(devstack.RouteEmitterPorts{GRPC: ports[0], Debug: ports[1]}, devstack.RouterPorts{HTTP: ports[2], Admin: ports[3]}, RegisterInterval, false)
	s.RouteEmitter.PassListeners(reserved[:2]...)
	s.Router.PassListeners(reserved[2:]...)
	s.RouteEmitter.Config.LogLevel = "debug"
	s.Router.Config.LogLevel = "debug"
	if opts.ConfigureRouteEmitter != nil {
		opts.ConfigureRouteEmitter(&s.RouteEmitter.Config)
	}
	if opts.ConfigureRouter != nil {
		opts.ConfigureRouter(&s.Router.Config)
	}
}

// addFileserver describes a fileserver on free ports.
func addFileserver(t testing.TB, s *devstack.Stack) {
	t.Helper()
	if err := builds.fileserver.do(s.Root, s.BinDir, devstack.FileserverBinary); err != nil {
		t.Fatal(err)
	}
	ports, reserved := reservePorts(t, 2)
	f := s.AddFileserver(devstack.FileserverPorts{HTTP: ports[0], Debug: ports[1]}, false)
	f.PassListeners(reserved...)
	f.Config.LogLevel = "debug"
}

// addStager describes a stager on free ports (call it after addFileserver), with the
// lifecycle bundle built.
func addStager(t testing.TB, s *devstack.Stack, opts StagerOptions) {
	t.Helper()
	if err := builds.stager.do(s.Root, s.BinDir, devstack.StagerBinary); err != nil {
		t.Fatal(err)
	}
	if err := builds.lifecycle.do(s.Root, filepath.Join(s.BinDir, "lifecycle"), devstack.LifecycleBinaries...); err != nil {
		t.Fatal(err)
	}
	ports, reserved := reservePorts(t, 3)
	g := s.AddStager(devstack.StagerPorts{GRPC: ports[0], Callback: ports[1], Debug: ports[2]}, false)
	g.PassListeners(reserved...)
	g.Config.LogLevel = "debug"
	if opts.Configure != nil {
		opts.Configure(&g.Config)
	}
}

// Client returns a BBS client of replica i of s, closed when the test ends.
func Client(t testing.TB, s *devstack.Stack, i int) *client.Client {
	t.Helper()
	c, err := s.Dial(i)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// reservePorts reserves n distinct ports on 127.0.0.1 (lib/handover): their listeners
// stay open until the services they are given to (Service.PassListeners) start, so that
// no other process can take them in between; those left over are released when the test
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
