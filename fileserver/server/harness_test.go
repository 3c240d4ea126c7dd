package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/blobstore"
	"drover.dev/fileserver/signedurl"
)

const (
	waitTimeout = 10 * time.Second
	pollEvery   = 10 * time.Millisecond
)

var testKey = []byte("test-signing-key-0123456789")

// fixture is a server over fresh directories, served by httptest.
type fixture struct {
	*Server
	url       string
	staticDir string
	blobDir   string
	now       time.Time
}

// testMatchLimits are the fixture's resource matching limits.
var testMatchLimits = MatchLimits{MaxBytes: 4096, MaxResources: 10, MaxConcurrent: 2}

// newFixture serves a Server with small limits.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, func(*Options) {})
}

// newFixtureWith is newFixture with options changed by tune.
func newFixtureWith(t *testing.T, tune func(*Options)) *fixture {
	t.Helper()
	f := &fixture{staticDir: t.TempDir(), blobDir: t.TempDir(), now: time.Unix(1_700_000_000, 0)}
	store, err := blobstore.Open(f.blobDir)
	require.NoError(t, err)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	opts := Options{StaticDir: f.staticDir, Store: store, SigningKey: testKey, Metrics: m,
		Limits: blobstore.PackageLimits{MaxBytes: 1000, MaxFiles: 10}, MaxBlobBytes: 1 << 20,
		MaxPackageListBytes: 2048, Match: testMatchLimits,
		Now: func() time.Time { return f.now }}
	tune(&opts)
	s, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	f.Server = s
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// signed returns the URL of path signed to expire in ttl.
func (f *fixture) signed(path string, ttl time.Duration) string {
	return f.url + path + "?" + signedurl.Sign(testKey, path, f.now.Add(ttl)).Encode()
}

// do sends a request and returns the status, body and headers.
func do(t *testing.T, method, url string, body []byte, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data), resp.Header
}

// storedFiles lists every file under the blob directory (blobs, pool and tmp).
func (f *fixture) storedFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(f.blobDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	}))
	return out
}

// write creates a file (and its parents) under dir.
func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}
