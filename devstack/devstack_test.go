package devstack

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/store/storetest"
)

// TestUpAndDownFromAnotherProcess brings a detached stack up the way `make up` does,
// then finds and stops it through its state file only, the way `make down` does.
func TestUpAndDownFromAnotherProcess(t *testing.T) {
	ports, err := freePorts(3)
	require.NoError(t, err)
	home := t.TempDir()
	opts := Options{
		Home:        home,
		DatabaseURL: storetest.NewDatabase(t),
		Ports:       Ports{GRPC: ports[0], HTTP: ports[1], Debug: ports[2]},
		Logf:        t.Logf,
		Cells:       -1, // BBS only: cells need the dev stack's fixed networks
	}
	s, err := Up(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop(t.Context()) }) // only if the test fails half-way
	require.Len(t, s.BBS, 1)
	pid := s.BBS[0].Pid()
	require.NotZero(t, pid)
	require.FileExists(t, filepath.Join(home, "certs", "client.crt"))
	require.FileExists(t, filepath.Join(s.BinDir, "droverctl"))

	again, err := Up(t.Context(), opts)
	require.NoError(t, err)
	require.Equal(t, pid, again.BBS[0].Pid(), "a healthy stack is left as it is")

	loaded, err := Load(home)
	require.NoError(t, err)
	statuses := loaded.Status(t.Context())
	require.Len(t, statuses, 2)
	require.Equal(t, "postgres", statuses[0].Name, "the database is listed first")
	require.Zero(t, statuses[0].Pid, "a database the stack was given has no pid of its own")
	require.Contains(t, statuses[0].Addresses, "not started by the stack")
	require.NoError(t, statuses[0].Unhealthy)
	require.Equal(t, pid, statuses[1].Pid)
	require.NoError(t, statuses[1].Unhealthy)

	bad := opts
	bad.Replicas, bad.Ports.HTTP = 2, ports[1]
	_, err = Up(t.Context(), bad)
	require.ErrorIs(t, err, ErrRunningStack)
	require.EqualError(t, err, "-replicas 2 (it runs with 1) cannot apply to a running stack: run `make down` first")
	require.Equal(t, pid, loaded.BBS[0].Pid(), "a refused up changes nothing")
	bad = opts
	bad.Ports.GRPC = ports[0] + 1
	bad.DatabaseURL = "postgres://elsewhere/db"
	_, err = Up(t.Context(), bad)
	require.EqualError(t, err, fmt.Sprintf("-database-url (it runs with another database), -grpc-port %d (it runs with %d) cannot apply to a running stack: run `make down` first", ports[0]+1, ports[0]))
	kept := opts
	kept.Ports = Ports{}
	again, err = Up(t.Context(), kept)
	require.NoError(t, err, "ports not given keep what runs")
	require.Equal(t, pid, again.BBS[0].Pid())

	root, err := FindRoot()
	require.NoError(t, err)
	require.NoError(t, DownHome(t.Context(), root, home))
	_, err = os.Stat("/proc/" + strconv.Itoa(pid))
	require.True(t, os.IsNotExist(err) || !(&process{pid: pid, marker: s.BBS[0].ConfigPath()}).alive(),
		"the BBS survived down")
	require.NoFileExists(t, filepath.Join(home, stateFile))
	require.NoFileExists(t, s.BBS[0].PidPath())
	_, err = Load(home)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestProcessAliveRefusesARecycledPid checks that a pid file naming another program is
// not taken for the BBS.
func TestProcessAliveRefusesARecycledPid(t *testing.T) {
	self := os.Getpid()
	require.True(t, (&process{pid: self, marker: os.Args[0]}).alive())
	require.False(t, (&process{pid: self, marker: "/no/such/config.json"}).alive())
	require.Nil(t, adopt(self, "/no/such/config.json"))
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
