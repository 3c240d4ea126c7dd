package devstack

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"drover.dev/bbs/client"
	bbsconfig "drover.dev/bbs/config"
	"drover.dev/bbs/store/storetest"
)

// TestOptions shape a test stack.
type TestOptions struct {
	// Replicas is the number of BBS processes sharing the database (default 1).
	Replicas int
	// Configure may change replica i's configuration before it starts.
	Configure func(i int, c *bbsconfig.Config)
}

// testDatabaseConnections caps each test BBS's pool: many run at once on one Postgres.
const testDatabaseConnections = 10

// build compiles the binaries once per test process.
var build struct {
	once sync.Once
	err  error
}

// NewTest starts a stack private to the test: a temporary home, a fresh database on the
// scripts/postgres.sh server (storetest.NewDatabase), new certificates, free ports, and
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
	build.once.Do(func() { build.err = Build(context.Background(), root, s.BinDir, BBSBinary) })
	if build.err != nil {
		t.Fatal(build.err)
	}
	s.DatabaseURL = storetest.NewDatabase(t)
	if err := s.Certs.Ensure(); err != nil {
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
		ports, err := freePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		b := s.newBBS(i, Ports{GRPC: ports[0], HTTP: ports[1], Debug: ports[2]}, passphrase, false)
		b.Config.LogLevel = "debug"
		b.Config.MaxDatabaseConnections = testDatabaseConnections
		if opts.Configure != nil {
			opts.Configure(i, &b.Config)
		}
		s.BBS = append(s.BBS, b)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, b := range s.BBS {
				t.Logf("%s logs:\n%s", b.Name, b.LogTail(60))
			}
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("stop test stack: %v", err)
		}
	})
	for _, b := range s.BBS {
		if err := b.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return s
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

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment ago.
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
