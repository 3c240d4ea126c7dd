package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStaticServesWithETagRangeAndConditionals(t *testing.T) {
	f := newFixture(t)
	content := "builder bundle bytes"
	write(t, f.staticDir, "busybox/builder.tgz", content)
	sum := sha256.Sum256([]byte(content))
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	url := f.url + "/v1/static/busybox/builder.tgz"

	code, body, h := do(t, "GET", url, nil, nil)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, content, body)
	assert.Equal(t, etag, h.Get("ETag"))
	assert.NotEmpty(t, h.Get("Last-Modified"))

	code, body, h = do(t, "HEAD", url, nil, nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, body)
	assert.Equal(t, etag, h.Get("ETag"))
	assert.Equal(t, "20", h.Get("Content-Length"))

	code, _, _ = do(t, "GET", url, nil, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusNotModified, code)
	code, _, _ = do(t, "GET", url, nil, map[string]string{"If-Modified-Since": h.Get("Last-Modified")})
	assert.Equal(t, http.StatusNotModified, code)

	code, body, h = do(t, "GET", url, nil, map[string]string{"Range": "bytes=0-6"})
	assert.Equal(t, http.StatusPartialContent, code)
	assert.Equal(t, "builder", body)
	assert.Equal(t, "bytes 0-6/20", h.Get("Content-Range"))

	code, body, _ = do(t, "GET", f.url+"/v1/static/busybox/missing.tgz", nil, nil)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "File not found: missing.tgz\n", body)
	code, body, _ = do(t, "GET", f.url+"/v1/static/busybox/builder.tgz/x", nil, nil)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "File not found: x\n", body)

	code, _, _ = do(t, "POST", url, nil, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.Requests.WithLabelValues("static", "206")))
}

func TestStaticRefusesDirectoryListing(t *testing.T) {
	f := newFixture(t)
	write(t, f.staticDir, "busybox/builder.tgz", "x")
	for _, path := range []string{"/v1/static/", "/v1/static/busybox", "/v1/static/busybox/"} {
		code, body, _ := do(t, "GET", f.url+path, nil, nil)
		assert.Equal(t, http.StatusForbidden, code, path)
		assert.Equal(t, "directory listing refused\n", body, path)
		assert.NotContains(t, body, "builder.tgz")
	}
	assert.Equal(t, 3.0, testutil.ToFloat64(f.metrics.Refusals.WithLabelValues("directory-listing")))
}

// TestStaticRefusesPathEscapes: ".." (plain or percent-encoded) and symlinks leading out
// of the root are 400 and serve nothing of the outside file.
func TestStaticRefusesPathEscapes(t *testing.T) {
	f := newFixture(t)
	outside := t.TempDir()
	write(t, outside, "secret", "top secret")
	write(t, f.staticDir, "ok.txt", "fine")
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(f.staticDir, "link-file")))
	require.NoError(t, os.Symlink(outside, filepath.Join(f.staticDir, "link-dir")))
	require.NoError(t, os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(f.staticDir, "relative-link")))
	rel, err := filepath.Rel(f.staticDir, filepath.Join(outside, "secret"))
	require.NoError(t, err)

	tests := []struct {
		name, path, want string
	}{
		{"dot dot", "/v1/static/../" + rel, "invalid path: \"..\" segment\n"},
		{"dot dot inside", "/v1/static/busybox/../ok.txt", "invalid path: \"..\" segment\n"},
		{"encoded dot dot", "/v1/static/%2e%2e/" + rel, "invalid path: \"..\" segment\n"},
		{"encoded slash and dots", "/v1/static/%2e%2e%2f" + rel, "invalid path: \"..\" segment\n"},
		{"symlink to an outside file", "/v1/static/link-file", "invalid path: resolves outside the static directory\n"},
		{"symlink to an outside dir", "/v1/static/link-dir/secret", "invalid path: resolves outside the static directory\n"},
		{"relative symlink out", "/v1/static/relative-link", "invalid path: resolves outside the static directory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rawGet(t, f.url, tt.path)
			assert.Equal(t, http.StatusBadRequest, code)
			assert.Equal(t, tt.want, body)
			assert.NotContains(t, body, "top secret")
		})
	}
}

// rawGet sends path verbatim (no client-side cleaning) and returns status and body.
func rawGet(t *testing.T, base, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", base, nil)
	require.NoError(t, err)
	req.URL.Opaque = path
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}
