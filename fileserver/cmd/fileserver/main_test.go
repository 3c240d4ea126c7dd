package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/client"
	"drover.dev/lib/proctest"
	"drover.dev/lib/service"
)

const (
	waitTimeout = 30 * time.Second
	pollEvery   = 20 * time.Millisecond
)

// binDir holds the binary TestMain builds.
var binDir string

func TestMain(m *testing.M) {
	proctest.BuildAndRun(m, &binDir, map[string]string{".": "fileserver"})
}

// fileserverConfig is a valid configuration over fresh directories and free ports.
func fileserverConfig(t *testing.T) map[string]any {
	t.Helper()
	dir := t.TempDir()
	static := filepath.Join(dir, "static")
	require.NoError(t, os.MkdirAll(filepath.Join(static, "busybox"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(static, "busybox", "builder.tgz"), []byte("bundle"), 0o644))
	keyFile := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("cmd-test-signing-key-0123\n"), 0o600))
	return map[string]any{
		"server_address": proctest.ReserveAddress(t), "debug_address": proctest.ReserveAddress(t),
		"static_directory": static, "blob_directory": filepath.Join(dir, "blobs"), "signing_key_file": keyFile,
	}
}

func start(t *testing.T, cfg map[string]any) *proctest.Process {
	t.Helper()
	return proctest.Start(t, "fileserver", filepath.Join(binDir, "fileserver"), "-config", proctest.WriteJSON(t, "fileserver.json", cfg))
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestFileserverProcess(t *testing.T) {
	cfg := fileserverConfig(t)
	cfg["max_match_resources"] = 2
	cfg["debug_admin_address"] = "unix:" + filepath.Join(t.TempDir(), "admin.sock")
	p := start(t, cfg)
	base := "http://" + cfg["server_address"].(string)
	require.Eventually(t, func() bool { code, _ := get(t, base+"/healthz"); return code == http.StatusOK }, waitTimeout, pollEvery)
	require.Eventually(t, func() bool { return strings.Contains(p.Output(), `"msg":"fileserver-started"`) }, waitTimeout, pollEvery)

	code, body := get(t, base+"/v1/static/busybox/builder.tgz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "bundle", body)

	c := client.New(base, []byte("cmd-test-signing-key-0123"), nil)
	req, err := http.NewRequest(http.MethodPut, c.SignedUploadURL("droplets/a.tgz", time.Minute), strings.NewReader("droplet"))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	// The log line reaches p.Output through a pipe, after the response may have.
	assert.Eventually(t, func() bool { return strings.Contains(p.Output(), `"msg":"blob-stored"`) }, waitTimeout, pollEvery)
	assert.FileExists(t, filepath.Join(cfg["blob_directory"].(string), "blobs", "droplets", "a.tgz"))

	_, metrics := get(t, "http://"+cfg["debug_address"].(string)+"/metrics")
	assert.Contains(t, metrics, `drover_fileserver_requests_total{code="201",route="blob-upload"} 1`)
	assert.Contains(t, metrics, `drover_fileserver_upload_bytes_total{kind="blob"} 7`)

	resp, err = http.Post(base+"/v1/resource_match", "application/json", strings.NewReader("[{},{},{}]"))
	require.NoError(t, err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Contains(t, string(data), "more than 2 resources (max_match_resources)")

	code, _ = get(t, "http://"+cfg["debug_address"].(string)+"/debug/pprof/")
	assert.Equal(t, http.StatusNotFound, code, "pprof is on the admin socket only")
	admin := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", strings.TrimPrefix(cfg["debug_admin_address"].(string), "unix:"))
	}}}
	resp, err = admin.Get("http://debug/debug/pprof/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	p.Signal(t, syscall.SIGTERM)
	require.Equal(t, service.ExitOK, p.WaitExit(t, waitTimeout))
}

func TestFileserverRefusesABadConfig(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(cfg map[string]any)
		want   string
	}{
		{"no static directory", func(cfg map[string]any) { delete(cfg, "static_directory") }, "static_directory: is required"},
		{"short key", func(cfg map[string]any) {
			require.NoError(t, os.WriteFile(cfg["signing_key_file"].(string), []byte("short"), 0o600))
		}, "signing_key_file: key must be at least 16 bytes"},
		{"unknown field", func(cfg map[string]any) { cfg["static_dir"] = "/tmp" }, "static_dir"},
		{"bad address", func(cfg map[string]any) { cfg["server_address"] = "8080" }, "server_address: must be host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fileserverConfig(t)
			tt.mutate(cfg)
			p := start(t, cfg)
			require.Equal(t, service.ExitFatal, p.WaitExit(t, waitTimeout))
			assert.Contains(t, p.Output(), tt.want)
		})
	}
	t.Run("missing -config", func(t *testing.T) {
		p := proctest.Start(t, "fileserver", filepath.Join(binDir, "fileserver"))
		require.Equal(t, service.ExitUsage, p.WaitExit(t, waitTimeout))
		assert.Contains(t, p.Output(), "missing-config-flag")
	})
}
