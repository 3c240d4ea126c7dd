package client_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/blobstore"
	"drover.dev/fileserver/client"
	"drover.dev/fileserver/server"
)

var key = []byte("client-test-signing-key-0123")

// serve runs the real server handler and returns a client of it.
func serve(t *testing.T) (*client.Client, string) {
	t.Helper()
	return serveThrough(t, func(h http.Handler) http.Handler { return h })
}

// serveThrough is serve with the server's handler wrapped by wrap.
func serveThrough(t *testing.T, wrap func(http.Handler) http.Handler) (*client.Client, string) {
	t.Helper()
	staticDir := t.TempDir()
	write(t, staticDir, "busybox/builder.tgz", "bundle", 0o644)
	store, err := blobstore.Open(t.TempDir())
	require.NoError(t, err)
	m, err := server.NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	s, err := server.New(server.Options{StaticDir: staticDir, Store: store, SigningKey: key, Metrics: m,
		Limits: blobstore.PackageLimits{MaxBytes: 1 << 20, MaxFiles: 100}, MaxBlobBytes: 1 << 20, MaxPackageListBytes: 1 << 20,
		Match: server.MatchLimits{MaxBytes: 1 << 20, MaxResources: client.MatchBatchSize, MaxConcurrent: 2}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ts := httptest.NewServer(wrap(s))
	t.Cleanup(ts.Close)
	return client.New(ts.URL+"/", key, nil), ts.URL
}

func write(t *testing.T, dir, rel, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), mode))
	require.NoError(t, os.Chmod(p, mode))
}

func TestScanDir(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "start.sh", "echo hi\n", 0o755)
	write(t, dir, "b/index.html", "<h1>hi</h1>", 0o600)
	write(t, dir, ".git/HEAD", "ref", 0o644)
	write(t, dir, "sub/.git/config", "x", 0o644)
	require.NoError(t, os.Symlink("start.sh", filepath.Join(dir, "link.sh")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "empty"), 0o755))

	list, err := client.ScanDir(dir)
	require.NoError(t, err)
	assert.Equal(t, []client.Resource{
		{Path: "b/index.html", SHA1: sha1hex("<h1>hi</h1>"), Size: 11, Mode: "0644"},
		{Path: "start.sh", SHA1: sha1hex("echo hi\n"), Size: 8, Mode: "0755"},
	}, list, "regular files only, sorted, .git skipped, modes normalised")

	_, err = client.ScanDir(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "scanning")
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestWriteZipHoldsJustTheGivenFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "a", 0o644)
	write(t, dir, "d/b.txt", "bb", 0o644)
	list, err := client.ScanDir(dir)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, client.WriteZip(&buf, dir, list[1:]))
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	require.Len(t, zr.File, 1)
	assert.Equal(t, "d/b.txt", zr.File[0].Name)

	assert.ErrorContains(t, client.WriteZip(io.Discard, dir, []client.Resource{{Path: "../x"}}), `fn "../x"`)
	assert.ErrorContains(t, client.WriteZip(io.Discard, dir, []client.Resource{{Path: "gone"}}), "no such file")
}

// TestPushFlow: match, upload the missing files, and again: unchanged bits upload
// nothing and give the same package; one changed file uploads just that file.
func TestPushFlow(t *testing.T) {
	c, _ := serve(t)
	ctx := context.Background()
	dir := t.TempDir()
	write(t, dir, "index.html", "<h1>v1</h1>", 0o644)
	write(t, dir, "start.sh", "exec httpd", 0o755)
	write(t, dir, "img/logo.txt", "logo", 0o644)

	push := func() client.Package {
		all, err := client.ScanDir(dir)
		require.NoError(t, err)
		known, err := c.MatchResources(ctx, all)
		require.NoError(t, err)
		pkg, err := c.UploadPackage(ctx, dir, all, missing(all, known))
		require.NoError(t, err)
		return pkg
	}
	first := push()
	assert.Equal(t, 3, first.ReceivedFiles)
	assert.Equal(t, 0, first.ReusedFiles)
	assert.Equal(t, int64(25), first.ReceivedBytes)
	assert.Equal(t, "packages/"+first.SHA256+".zip", first.Key)

	second := push()
	assert.Equal(t, 0, second.ReceivedFiles)
	assert.Equal(t, 3, second.ReusedFiles)
	assert.Equal(t, first.SHA256, second.SHA256)

	write(t, dir, "index.html", "<h1>v2!</h1>", 0o644)
	third := push()
	assert.Equal(t, 1, third.ReceivedFiles)
	assert.Equal(t, 2, third.ReusedFiles)
	assert.NotEqual(t, first.SHA256, third.SHA256)

	sum, err := c.BlobSHA256(ctx, third.Key)
	require.NoError(t, err)
	assert.Equal(t, third.SHA256, sum)
	_, err = c.BlobSHA256(ctx, "packages/none.zip")
	require.ErrorIs(t, err, client.ErrBlobNotFound)
}

func missing(all, known []client.Resource) []client.Resource {
	have := map[string]bool{}
	for _, r := range known {
		have[r.SHA1] = true
	}
	var out []client.Resource
	for _, r := range all {
		if !have[r.SHA1] {
			out = append(out, r)
		}
	}
	return out
}

func TestURLs(t *testing.T) {
	c, base := serve(t)
	ctx := context.Background()
	assert.Equal(t, base+"/v1/static/busybox/builder.tgz", c.StaticURL("busybox/builder.tgz"))
	assert.Equal(t, base+"/v1/blobs/droplets/x.tgz", c.BlobURL("droplets/x.tgz"))

	for _, method := range []string{http.MethodPut, http.MethodPost} {
		req, err := http.NewRequest(method, c.SignedUploadURL("droplets/x.tgz", time.Minute), strings.NewReader("droplet-"+method))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, method)
	}
	resp, err := http.Get(c.BlobURL("droplets/x.tgz"))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "droplet-POST", string(body))

	expired := c.SignedUploadURL("droplets/y.tgz", -time.Minute)
	req, _ := http.NewRequest(http.MethodPut, expired, strings.NewReader("x"))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp, err = http.Get(c.StaticURL("/busybox/builder.tgz"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	wrong := client.New(base, []byte("some-other-key-0123456789"), nil)
	_, err = wrong.UploadPackage(ctx, t.TempDir(), []client.Resource{}, nil)
	assert.ErrorContains(t, err, "403 Forbidden: invalid signature")
	_, err = c.MatchResources(ctx, []client.Resource{{SHA1: "bad"}})
	assert.ErrorContains(t, err, "400 Bad Request: entry 0: sha1")
}

// TestMatchResourcesInBatches: the client asks about each distinct content once,
// without paths, in requests the server accepts, retries a request refused as busy,
// and returns every listed file whose content the server has.
func TestMatchResourcesInBatches(t *testing.T) {
	var mu sync.Mutex
	var batches []int
	busy := 2
	c, _ := serveThrough(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/resource_match" {
				h.ServeHTTP(w, r)
				return
			}
			data, err := io.ReadAll(r.Body)
			assert.NoError(t, err)
			assert.NotContains(t, string(data), `"fn"`)
			var list []map[string]any
			assert.NoError(t, json.Unmarshal(data, &list))
			mu.Lock()
			refuse := busy > 0
			if refuse {
				busy--
			} else {
				batches = append(batches, len(list))
			}
			mu.Unlock()
			if refuse {
				w.Header().Set("Retry-After", "0")
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
			h.ServeHTTP(w, r)
		})
	})
	ctx := context.Background()
	dir := t.TempDir()
	write(t, dir, "a.txt", "known", 0o644)
	known, err := client.ScanDir(dir)
	require.NoError(t, err)
	_, err = c.UploadPackage(ctx, dir, known, known)
	require.NoError(t, err)

	var all []client.Resource
	for i := range 2*client.MatchBatchSize + 10 {
		sum := sha1.Sum([]byte(strconv.Itoa(i)))
		all = append(all, client.Resource{Path: "f" + strconv.Itoa(i), SHA1: hex.EncodeToString(sum[:]), Size: 1})
	}
	all = append(all, client.Resource{Path: "copy/a.txt", SHA1: known[0].SHA1, Size: known[0].Size}, known[0])
	got, err := c.MatchResources(ctx, all)
	require.NoError(t, err)
	assert.Equal(t, []client.Resource{all[len(all)-2], all[len(all)-1]}, got, "both files with the known content, paths kept")
	assert.Equal(t, []int{client.MatchBatchSize, client.MatchBatchSize, 11}, batches, "2011 distinct contents")

	got, err = c.MatchResources(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// TestMatchResourcesGivesUpWhenBusy: a server that stays busy is an error after a few
// tries.
func TestMatchResourcesGivesUpWhenBusy(t *testing.T) {
	var tries atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tries.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, "resource_match: 8 matches in progress", http.StatusServiceUnavailable)
	}))
	t.Cleanup(ts.Close)
	_, err := client.New(ts.URL, key, nil).MatchResources(context.Background(), []client.Resource{{SHA1: strings.Repeat("a", 40)}})
	require.ErrorContains(t, err, "503 Service Unavailable: resource_match: 8 matches in progress")
	assert.Equal(t, int32(5), tries.Load())
}
