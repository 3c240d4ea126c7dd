package devstack

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"drover.dev/lib/testenv"
)

// TestHostNetworkConnectsHosts creates a test network with 2 cell hosts: each host has
// its address, a server on the router host answers a client on the client host (and
// the root namespace) at the router's address, a removed host is gone, and Remove leaves
// nothing.
func TestHostNetworkConnectsHosts(t *testing.T) {
	testenv.RequireRoot(t, "a test network needs network namespaces")
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3", "the test serves HTTP with python3 -m http.server")
	}
	id, err := NewHostID()
	require.NoError(t, err)
	n, err := CreateHostNetwork(t.Context(), id, 2)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, n.Remove(context.Background()))
		require.Empty(t, n.Leftovers(context.Background()), "Remove leaves nothing")
	})
	require.Len(t, n.Hosts, 5)
	router, client := *n.Host(HostRouter), *n.Host(HostClient)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/index.html", []byte("on the router host\n"), 0o644))
	srv := exec.Command(nsenterPath, "--net="+router.NetnsPath(), "--", "python3", "-m", "http.server", "--bind", router.IP, "--directory", dir, "8000")
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })

	for _, c := range map[string]*http.Client{"client host": client.HTTPClient(2 * time.Second), "root namespace": {Timeout: 2 * time.Second}} {
		var body string
		require.Eventually(t, func() bool {
			resp, err := c.Get("http://" + router.IP + ":8000/index.html")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return resp.StatusCode == http.StatusOK
		}, 10*time.Second, 50*time.Millisecond)
		require.Equal(t, "on the router host", strings.TrimSpace(body))
	}
	// The client host does not see the router's listener on its own address.
	_, err = client.DialContext(t.Context(), "tcp", client.IP+":8000")
	require.Error(t, err, "the server listens on the router host only")

	require.NoError(t, n.RemoveHost(t.Context(), CellHostName(2)))
	left := n.Leftovers(t.Context())
	for _, l := range left {
		require.NotContains(t, l, n.Host(CellHostName(2)).Netns)
	}
	_, err = n.Host(CellHostName(2)).DialContext(t.Context(), "tcp", router.IP+":8000")
	require.Error(t, err, "a removed host cannot dial")
}

// TestInNetnsReturnsThreads runs functions in a test host's namespace and in a removed
// host's (a new empty one): each runs there, and afterwards every thread of the process
// is back in the root namespace (threads are reused, not discarded: a discarded thread
// would SIGKILL the attached services it started, through their parent-death signal).
func TestInNetnsReturnsThreads(t *testing.T) {
	testenv.RequireRoot(t, "entering network namespaces needs root")
	id, err := NewHostID()
	require.NoError(t, err)
	n, err := CreateHostNetwork(t.Context(), id, 1)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Remove(context.Background())) })
	root, err := os.Readlink("/proc/thread-self/ns/net")
	require.NoError(t, err)
	client := n.Host(HostClient)
	want, err := os.Readlink(client.NetnsPath())
	if err != nil { // /run/netns files are bind mounts, not links: compare inodes instead
		var st unix.Stat_t
		require.NoError(t, unix.Stat(client.NetnsPath(), &st))
		want = "net:[" + strconv.FormatUint(st.Ino, 10) + "]"
	}
	for range 50 {
		var inHost, inGone string
		require.NoError(t, inNetns(client.Netns, func() (err error) {
			inHost, err = os.Readlink("/proc/thread-self/ns/net")
			return err
		}))
		require.Equal(t, want, inHost)
		require.NoError(t, inNetns("drover-gone-host", func() (err error) {
			inGone, err = os.Readlink("/proc/thread-self/ns/net")
			return err
		}))
		require.NotEqual(t, root, inGone, "a removed host's work runs outside the root namespace")
		require.NotEqual(t, want, inGone)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	for _, task := range tasks {
		ns, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net")
		require.NoError(t, err)
		require.Equal(t, root, ns, "thread %s is back in the root namespace", task.Name())
	}
}
