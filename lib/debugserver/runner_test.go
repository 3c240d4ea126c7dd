package debugserver

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"
)

const stopTimeout = 10 * time.Second

// freePort returns a TCP port that was free on loopback a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	return strconv.Itoa(lis.Addr().(*net.TCPAddr).Port)
}

// start runs a debug server at addrs until the test ends and returns its level.
func start(t *testing.T, addrs Addresses) *slog.LevelVar {
	t.Helper()
	level := new(slog.LevelVar)
	process := ifrit.Invoke(New(addrs, NewRegistry(), level, nil))
	t.Cleanup(func() {
		process.Signal(os.Interrupt)
		select {
		case err := <-process.Wait():
			require.NoError(t, err)
		case <-time.After(stopTimeout):
			t.Fatal("debug server did not stop")
		}
	})
	select {
	case err := <-process.Wait():
		t.Fatalf("debug server exited: %v", err)
	default:
	}
	return level
}

// startFails runs a debug server at addrs that must fail to start; it returns the error.
func startFails(t *testing.T, addrs Addresses) error {
	t.Helper()
	process := ifrit.Background(New(addrs, NewRegistry(), new(slog.LevelVar), nil))
	select {
	case err := <-process.Wait():
		require.Error(t, err)
		return err
	case <-time.After(stopTimeout):
		process.Signal(os.Interrupt)
		<-process.Wait()
		t.Fatal("debug server started")
		return nil
	}
}

// unixClient sends every request to the unix socket at path.
func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}

// send sends a request with c and returns the status and body.
func send(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// requireAdmin checks that pprof and /log-level are served at base through c.
func requireAdmin(t *testing.T, c *http.Client, base string, level *slog.LevelVar) {
	t.Helper()
	status, body := send(t, c, http.MethodGet, base+"/debug/pprof/", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "goroutine")
	status, _ = send(t, c, http.MethodGet, base+"/debug/pprof/cmdline", "")
	require.Equal(t, http.StatusOK, status)
	status, body = send(t, c, http.MethodPut, base+"/log-level", "debug")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "debug\n", body)
	require.Equal(t, slog.LevelDebug, level.Level())
	level.Set(slog.LevelInfo)
}

// requireMetricsOnly checks that base serves /metrics and /healthz, and neither pprof
// nor /log-level (which is left unchanged).
func requireMetricsOnly(t *testing.T, base string, level *slog.LevelVar) {
	t.Helper()
	status, body := send(t, http.DefaultClient, http.MethodGet, base+"/metrics", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "go_goroutines")
	status, body = send(t, http.DefaultClient, http.MethodGet, base+"/healthz", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok\n", body)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine", "/debug/pprof/profile?seconds=1", "/log-level"} {
		status, _ = send(t, http.DefaultClient, http.MethodGet, base+path, "")
		require.Equal(t, http.StatusNotFound, status, path)
	}
	for _, method := range []string{http.MethodPut, http.MethodPost} {
		status, _ = send(t, http.DefaultClient, method, base+"/log-level", "debug")
		require.Equal(t, http.StatusNotFound, status, method)
	}
	require.Equal(t, slog.LevelInfo, level.Level(), "level unchanged")
}

// TestSharedOnLoopback: by default everything is served on the (loopback) debug address.
func TestSharedOnLoopback(t *testing.T) {
	addr := "127.0.0.1:" + freePort(t)
	level := start(t, Addresses{Metrics: addr})
	base := "http://" + addr
	status, body := send(t, http.DefaultClient, http.MethodGet, base+"/healthz", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok\n", body)
	requireAdmin(t, http.DefaultClient, base, level)
}

// TestAdminOnUnixSocket: with /metrics on the wildcard address (reached here through
// loopback), pprof and /log-level are served only on the 0600 unix socket, which is
// removed when the server stops.
func TestAdminOnUnixSocket(t *testing.T) {
	port := freePort(t)
	sock := filepath.Join(t.TempDir(), "admin.sock")
	level := start(t, Addresses{Metrics: "0.0.0.0:" + port, Admin: "unix:" + sock})

	requireMetricsOnly(t, "http://127.0.0.1:"+port, level)
	requireAdmin(t, unixClient(sock), "http://debug", level)
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&fs.ModeSocket)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
}

func TestUnixSocketRemovedOnStop(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "admin.sock")
	process := ifrit.Invoke(New(Addresses{Metrics: "127.0.0.1:" + freePort(t), Admin: "unix:" + sock}, nil, nil, nil))
	require.FileExists(t, sock)
	process.Signal(os.Interrupt)
	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(stopTimeout):
		t.Fatal("debug server did not stop")
	}
	require.NoFileExists(t, sock)
}

// TestAdminOnLoopbackPort: a separate loopback port serves pprof and /log-level; the
// wildcard metrics listener does not.
func TestAdminOnLoopbackPort(t *testing.T) {
	port, adminAddr := freePort(t), "127.0.0.1:"+freePort(t)
	level := start(t, Addresses{Metrics: "0.0.0.0:" + port, Admin: adminAddr})
	requireMetricsOnly(t, "http://127.0.0.1:"+port, level)
	requireAdmin(t, http.DefaultClient, "http://"+adminAddr, level)
}

func TestAdminOff(t *testing.T) {
	addr := "127.0.0.1:" + freePort(t)
	level := start(t, Addresses{Metrics: addr, Admin: "off"})
	requireMetricsOnly(t, "http://"+addr, level)
}

// TestRefusesAdminOnNonLoopback: whatever the configuration says, pprof and /log-level
// are never served on a listener that is not loopback; the server fails to start and
// releases what it opened.
func TestRefusesAdminOnNonLoopback(t *testing.T) {
	port := freePort(t)
	err := startFails(t, Addresses{Metrics: "0.0.0.0:" + port})
	require.ErrorContains(t, err, "debug_address 0.0.0.0:"+port+" is not a loopback address (bound to ")
	require.ErrorContains(t, err, "pprof and /log-level would be served there")
	requirePortFree(t, "0.0.0.0:"+port)

	adminPort := freePort(t)
	err = startFails(t, Addresses{Metrics: "127.0.0.1:" + port, Admin: "0.0.0.0:" + adminPort})
	require.ErrorContains(t, err, "debug_admin_address: 0.0.0.0:"+adminPort+" is not a loopback address")
	requirePortFree(t, "127.0.0.1:"+port)
	requirePortFree(t, "0.0.0.0:"+adminPort)

	err = startFails(t, Addresses{Metrics: "127.0.0.1:" + port, Admin: "loopback"})
	require.ErrorContains(t, err, `debug_admin_address: want "", "off", "unix:PATH" or a loopback host:port, got "loopback"`)
}

// requirePortFree checks that nothing listens on addr any more.
func requirePortFree(t *testing.T, addr string) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	require.NoError(t, err, "listener on %s released", addr)
	require.NoError(t, lis.Close())
}

// TestUnixSocketPath: a stale socket is replaced; a live socket or another file at the
// path is an error and left alone.
func TestUnixSocketPath(t *testing.T) {
	dir := t.TempDir()
	metrics := func() string { return "127.0.0.1:" + freePort(t) }

	stale := filepath.Join(dir, "stale.sock")
	old, err := net.Listen("unix", stale)
	require.NoError(t, err)
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, old.Close())
	require.FileExists(t, stale)
	level := start(t, Addresses{Metrics: metrics(), Admin: "unix:" + stale})
	requireAdmin(t, unixClient(stale), "http://debug", level)

	live := filepath.Join(dir, "live.sock")
	other, err := net.Listen("unix", live)
	require.NoError(t, err)
	defer other.Close()
	require.ErrorContains(t, startFails(t, Addresses{Metrics: metrics(), Admin: "unix:" + live}), "unix socket "+live+": in use by another process")
	require.FileExists(t, live)

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("keep"), 0o644))
	require.ErrorContains(t, startFails(t, Addresses{Metrics: metrics(), Admin: "unix:" + file}), "unix socket "+file+": exists and is not a socket")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "keep", string(data))

	require.ErrorContains(t, startFails(t, Addresses{Metrics: metrics(), Admin: "unix:" + filepath.Join(dir, "missing", "s.sock")}), "bind")
}
