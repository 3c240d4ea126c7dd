package devstack

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
