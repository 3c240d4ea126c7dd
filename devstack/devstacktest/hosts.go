package devstacktest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"drover.dev/devstack"
	"drover.dev/lib/testenv"
)

// newHosts starts a multi-host test stack (Options.Hosts): a test network of its own
// (devstack.CreateHostNetwork) with the control, router and client hosts and one host
// per cell; a private Postgres, the BBS, the auctioneer and, when asked for, the
// converger, the route-emitter and the fileserver on control; NATS and the stand-in
// router on the router host; each rep on its cell's host, in the shared containerd. Every
// service listens on its host's address at the dev stack's fixed ports (each host is a
// machine of its own). Everything, the network included, is removed when the test ends,
// and the test fails if any of the network is left.
func newHosts(t testing.TB, opts Options) *devstack.Stack {
	t.Helper()
	testenv.RequireRoot(t, "a multi-host stack creates network namespaces, a bridge and veths")
	for _, tool := range []string{"ip", "nsenter", "runuser", devstack.NATSServerBinary} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "run scripts/install-deps.sh (iproute2, util-linux, nats-server)")
		}
	}
	if opts.Cells != 0 && opts.Cells != opts.Hosts {
		t.Fatalf("devstacktest: with Hosts %d, Cells must be 0 or %d (one cell per host), got %d", opts.Hosts, opts.Hosts, opts.Cells)
	}
	if opts.Registry || opts.Replicas > 1 {
		t.Fatal("devstacktest: a multi-host stack runs one BBS and no registries")
	}
	ctx := t.Context()
	root, err := devstack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: the postgres user must reach the cluster under it.
	home, err := os.MkdirTemp("", "drover-hosts-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &devstack.Stack{Root: root, Home: home, BinDir: devstack.BinDir(root)}
	s.Certs = devstack.Certs{Dir: filepath.Join(home, "certs")}
	if s.Containerd, err = devstack.SharedContainerd(ctx, root); err != nil {
		testenv.Missing(t, "containerd", err.Error())
	}
	id, err := devstack.NewHostID()
	if err != nil {
		t.Fatal(err)
	}
	n, err := devstack.CreateHostNetwork(ctx, id, opts.Hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := n.Remove(ctx); err != nil {
			t.Errorf("remove test network: %v", err)
		}
		if left := n.Leftovers(ctx); len(left) > 0 {
			t.Errorf("the test network left %v", left)
		}
	})
	t.Logf("test network %s on %s (bridge %s)", n.ID, n.Subnet, n.Bridge)
	s.DatabaseURL, s.DatabasePasswordFile, err = devstack.StartHostPostgres(ctx, root, home, n)
	t.Cleanup(func() {
		if err := devstack.StopHostPostgres(context.Background(), root, home); err != nil {
			t.Errorf("stop postgres: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := builds.bbs.do(root, s.BinDir, devstack.BBSBinary); err != nil {
		t.Fatal(err)
	}
	if err := builds.cells.do(root, s.BinDir, devstack.AuctioneerBinary, devstack.RepBinary); err != nil {
		t.Fatal(err)
	}
	passphrase, err := devstack.NewPassphrase()
	if err != nil {
		t.Fatal(err)
	}
	b := s.AddBBS(devstack.DefaultPorts, passphrase, false)
	b.Config.LogLevel = "debug"
	b.Config.MaxDatabaseConnections = databaseConnections
	if opts.Configure != nil {
		opts.Configure(0, &b.Config)
	}
	addHostCells(t, s, opts)
	if opts.ConfigureConverger != nil {
		if err := builds.converger.do(root, s.BinDir, devstack.ConvergerBinary); err != nil {
			t.Fatal(err)
		}
		c := s.AddConverger(devstack.DefaultConvergerDebugPort, ConvergeInterval, false)
		c.Config.LogLevel = "debug"
		opts.ConfigureConverger(&c.Config)
	}
	var nats *devstack.HostNATS
	if opts.Routing != nil {
		if nats, err = s.AddHostNATS(n, false); err != nil {
			t.Fatal(err)
		}
		addHostRouting(t, s, *opts.Routing)
	}
	if opts.Fileserver {
		if err := builds.fileserver.do(root, s.BinDir, devstack.FileserverBinary); err != nil {
			t.Fatal(err)
		}
		f := s.AddFileserver(devstack.DefaultFileserverPorts, false)
		f.Config.LogLevel = "debug"
	}
	if err := s.PlaceOnHosts(n); err != nil {
		t.Fatal(err)
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
		if nats != nil {
			nats.Shutdown()
		}
	})
	if nats != nil {
		if err := nats.Start(ctx, s.NATS); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(ctx, t.Logf); err != nil {
		t.Fatal(err)
	}
	return s
}

// addHostCells describes the auctioneer and one rep per cell host, each rep on the dev
// stack's ports of its cell, with the per-test namespaces, bridges and subnets of
// cellLayouts.
func addHostCells(t testing.TB, s *devstack.Stack, opts Options) {
	t.Helper()
	ports := make([]int, 0, 2*opts.Hosts)
	for i := range opts.Hosts {
		p := devstack.DefaultRepPort + devstack.CellPortStride*i
		ports = append(ports, p, p+1)
	}
	layouts, err := cellLayouts(opts.Hosts, ports)
	if err != nil {
		t.Fatal(err)
	}
	s.AddCells(layouts, devstack.DefaultAuctioneerPorts, false)
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

// addHostRouting describes the route-emitter and the stand-in router (s.NATS is set) on
// the dev stack's routing ports.
func addHostRouting(t testing.TB, s *devstack.Stack, opts RoutingOptions) {
	t.Helper()
	if err := builds.routing.do(s.Root, s.BinDir, devstack.RouteEmitterBinary, devstack.StandinRouterBinary); err != nil {
		t.Fatal(err)
	}
	s.AddRouting(devstack.DefaultRouteEmitterPorts, devstack.DefaultRouterPorts, RegisterInterval, false)
	s.RouteEmitter.Config.LogLevel = "debug"
	s.Router.Config.LogLevel = "debug"
	if opts.ConfigureRouteEmitter != nil {
		opts.ConfigureRouteEmitter(&s.RouteEmitter.Config)
	}
	if opts.ConfigureRouter != nil {
		opts.ConfigureRouter(&s.Router.Config)
	}
}
