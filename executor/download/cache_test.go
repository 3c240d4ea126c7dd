package download

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// artifactServer serves one artifact per path, with optional ETag and Last-Modified, and
// counts what it was asked.
type artifactServer struct {
	*httptest.Server
	mu        sync.Mutex
	artifacts map[string]*artifact
	gate      chan struct{} // when set, every request waits for it to close
	requests  atomic.Int32
	fulls     atomic.Int32
	active    atomic.Int32
	maxActive atomic.Int32
	ifNone    []string
	ifSince   []string
}

// artifact is what the server answers on one path.
type artifact struct {
	body     []byte
	etag     string
	modified time.Time
	status   int
}

func newArtifactServer(t *testing.T) *artifactServer {
	s := &artifactServer{artifacts: map[string]*artifact{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// put sets (or replaces) the artifact at path and returns its URL.
func (s *artifactServer) put(path string, a artifact) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.artifacts[path] = &a
	return s.URL + path
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *artifactServer) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	n := s.active.Add(1)
	defer s.active.Add(-1)
	for {
		m := s.maxActive.Load()
		if n <= m || s.maxActive.CompareAndSwap(m, n) {
			break
		}
	}
	s.mu.Lock()
	a, gate := s.artifacts[r.URL.Path], s.gate
	s.ifNone = append(s.ifNone, r.Header.Get("If-None-Match"))
	s.ifSince = append(s.ifSince, r.Header.Get("If-Modified-Since"))
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if a == nil {
		http.NotFound(w, r)
		return
	}
	if a.status != 0 {
		http.Error(w, "nope", a.status)
		return
	}
	if a.etag != "" {
		w.Header().Set("ETag", a.etag)
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	http.ServeContent(rec, r, "", a.modified, bytes.NewReader(a.body))
	if rec.status == http.StatusOK {
		s.fulls.Add(1)
	}
}

// newCache makes a cache in a fresh dir that talks to s.
func newCache(t *testing.T, s *artifactServer, maxBytes int64) *Cache {
	t.Helper()
	c, err := NewCache(t.TempDir(), maxBytes, s.Client())
	require.NoError(t, err)
	return c
}

// fetch fetches req and reads the whole tar stream.
func fetch(t *testing.T, c *Cache, req Request) (map[string]member, error) {
	t.Helper()
	rc, err := c.Fetch(context.Background(), req)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readTar(t, rc), nil
}

// mustFetch is fetch that must succeed.
func mustFetch(t *testing.T, c *Cache, req Request) map[string]member {
	t.Helper()
	got, err := fetch(t, c, req)
	require.NoError(t, err)
	return got
}

// dirFiles lists the names in dir.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	sort.Strings(out)
	return out
}

// downloadFiles counts the download files in dir (entries and temporaries).
func downloadFiles(t *testing.T, dir string) int {
	n := 0
	for _, name := range dirFiles(t, dir) {
		if strings.HasPrefix(name, filePrefix) {
			n++
		}
	}
	return n
}

// hexOf is the hex digest of data with alg.
func hexOf(alg string, data []byte) string {
	switch alg {
	case "md5":
		s := md5.Sum(data)
		return hex.EncodeToString(s[:])
	case "sha1":
		s := sha1.Sum(data)
		return hex.EncodeToString(s[:])
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

var appFiles = []file{{name: "app", dir: true}, {name: "app/index.html", body: "hello"}}

func TestFetchFormats(t *testing.T) {
	s := newArtifactServer(t)
	c := newCache(t, s, 1<<20)
	tarball := makeTar(t, appFiles...)
	for _, tc := range []struct {
		name string
		body []byte
		err  string
	}{
		{name: "tar", body: tarball},
		{name: "tgz", body: gzipped(t, tarball)},
		{name: "zip", body: makeZip(t, appFiles...)},
		{name: "plain file", body: []byte("just some text\n"), err: "/plain%20file is not a tar, tgz or zip archive"},
		{name: "gzipped plain file", body: gzipped(t, []byte("just text")), err: "is not a tar, tgz or zip archive"},
		{name: "empty body", body: nil, err: "is not a tar, tgz or zip archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := s.put("/"+tc.name, artifact{body: tc.body})
			got, err := fetch(t, c, Request{URL: u + "?token=secret"})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"app/", "app/index.html"}, names(got))
			assert.Equal(t, "hello", got["app/index.html"].body)
		})
	}
	assert.Zero(t, downloadFiles(t, c.dir), "uncached downloads leave no file behind")
}

func TestFetchChecksums(t *testing.T) {
	s := newArtifactServer(t)
	body := gzipped(t, makeTar(t, appFiles...))
	u := s.put("/app.tgz", artifact{body: body, etag: `"v1"`})
	for _, tc := range []struct {
		name, alg, value, err string
	}{
		{name: "md5", alg: "md5", value: hexOf("md5", body)},
		{name: "sha1", alg: "sha1", value: hexOf("sha1", body)},
		{name: "sha256 upper case", alg: "SHA256", value: strings.ToUpper(hexOf("sha256", body))},
		{name: "bad md5", alg: "md5", value: "0123", err: fmt.Sprintf("checksum mismatch for %s: expected md5 0123, got %s", u, hexOf("md5", body))},
		{name: "bad sha1", alg: "sha1", value: "ab", err: fmt.Sprintf("checksum mismatch for %s: expected sha1 ab, got %s", u, hexOf("sha1", body))},
		{name: "bad sha256", alg: "sha256", value: "ab", err: fmt.Sprintf("checksum mismatch for %s: expected sha256 ab, got %s", u, hexOf("sha256", body))},
		{name: "unknown algorithm", alg: "crc32", value: "ab", err: `unsupported checksum_algorithm "crc32"`},
	} {
		for _, key := range []string{"", "app"} {
			t.Run(tc.name+"/cache key "+key, func(t *testing.T) {
				c := newCache(t, s, 1<<20)
				req := Request{URL: u + "?sig=secret", CacheKey: key, ChecksumAlgorithm: tc.alg, ChecksumValue: tc.value}
				got, err := fetch(t, c, req)
				if tc.err != "" {
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.err)
					assert.Zero(t, c.Stats().Entries, "a failed checksum is not cached")
					assert.Zero(t, downloadFiles(t, c.dir))
					return
				}
				require.NoError(t, err)
				assert.Equal(t, "hello", got["app/index.html"].body)
			})
		}
	}
}

func TestChecksumVerifiedOnCacheHit(t *testing.T) {
	s := newArtifactServer(t)
	body := makeTar(t, appFiles...)
	u := s.put("/app.tar", artifact{body: body, etag: `"v1"`})
	c := newCache(t, s, 1<<20)
	mustFetch(t, c, Request{URL: u, CacheKey: "app"})

	mustFetch(t, c, Request{URL: u, CacheKey: "app", ChecksumAlgorithm: "sha1", ChecksumValue: hexOf("sha1", body)})
	_, err := fetch(t, c, Request{URL: u, CacheKey: "app", ChecksumAlgorithm: "md5", ChecksumValue: "beef"})
	assert.EqualError(t, err, fmt.Sprintf("checksum mismatch for %s: expected md5 beef, got %s", u, hexOf("md5", body)))
	assert.Equal(t, int32(1), s.fulls.Load(), "later fetches were served from the cache")
	assert.Equal(t, Stats{Hits: 1, Misses: 1, Bytes: int64(len(body)), Entries: 1}, c.Stats(), "a refused hit is not counted")
}

func TestCacheHitRevalidatesWithETag(t *testing.T) {
	s := newArtifactServer(t)
	body := makeTar(t, appFiles...)
	u := s.put("/app.tar", artifact{body: body, etag: `"v1"`})
	c := newCache(t, s, 1<<20)

	for range 3 {
		got := mustFetch(t, c, Request{URL: u, CacheKey: "app"})
		assert.Equal(t, "hello", got["app/index.html"].body)
	}
	assert.Equal(t, int32(3), s.requests.Load(), "every fetch revalidates")
	assert.Equal(t, int32(1), s.fulls.Load(), "the body is downloaded once")
	assert.Equal(t, []string{"", `"v1"`, `"v1"`}, s.ifNone)
	assert.Equal(t, Stats{Hits: 2, Misses: 1, Bytes: int64(len(body)), Entries: 1}, c.Stats())
}

func TestCacheHitRevalidatesWithLastModified(t *testing.T) {
	s := newArtifactServer(t)
	modified := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	u := s.put("/app.zip", artifact{body: makeZip(t, appFiles...), modified: modified})
	c := newCache(t, s, 1<<20)

	mustFetch(t, c, Request{URL: u, CacheKey: "app"})
	got := mustFetch(t, c, Request{URL: u, CacheKey: "app"})
	assert.Equal(t, "hello", got["app/index.html"].body)
	assert.Equal(t, []string{"", modified.Format(http.TimeFormat)}, s.ifSince)
	assert.Equal(t, int32(1), s.fulls.Load())
	assert.Equal(t, uint64(1), c.Stats().Hits)
}

func TestChangedArtifactReplacesEntry(t *testing.T) {
	s := newArtifactServer(t)
	u := s.put("/app.tar", artifact{body: makeTar(t, appFiles...), etag: `"v1"`})
	c := newCache(t, s, 1<<20)
	mustFetch(t, c, Request{URL: u, CacheKey: "app"})

	v2 := makeTar(t, file{name: "v2.txt", body: "two"})
	s.put("/app.tar", artifact{body: v2, etag: `"v2"`})
	got := mustFetch(t, c, Request{URL: u, CacheKey: "app"})
	assert.Equal(t, []string{"v2.txt"}, names(got))
	assert.Equal(t, Stats{Hits: 0, Misses: 2, Bytes: int64(len(v2)), Entries: 1}, c.Stats())
	assert.Equal(t, 1, downloadFiles(t, c.dir), "the old entry's file is gone")
}

func TestNoCacheKeyOrNoValidatorsMeansNoCaching(t *testing.T) {
	s := newArtifactServer(t)
	withETag := s.put("/etag.tar", artifact{body: makeTar(t, appFiles...), etag: `"v1"`})
	bare := s.put("/bare.tar", artifact{body: makeTar(t, appFiles...)})
	c := newCache(t, s, 1<<20)
	for _, req := range []Request{{URL: withETag}, {URL: withETag}, {URL: bare, CacheKey: "bare"}, {URL: bare, CacheKey: "bare"}} {
		mustFetch(t, c, req)
	}
	assert.Equal(t, int32(4), s.fulls.Load())
	assert.Equal(t, Stats{Misses: 4}, c.Stats())
	assert.Zero(t, downloadFiles(t, c.dir))
}

func TestLRUEviction(t *testing.T) {
	s := newArtifactServer(t)
	urls := map[string]string{}
	var size int64
	for _, name := range []string{"a", "b", "c"} {
		body := makeTar(t, file{name: name + ".txt", body: name})
		size = int64(len(body))
		urls[name] = s.put("/"+name+".tar", artifact{body: body, etag: `"` + name + `"`})
	}
	c := newCache(t, s, 2*size)
	get := func(name string) { mustFetch(t, c, Request{URL: urls[name], CacheKey: name}) }

	get("a")
	get("b")
	get("a") // a is now more recently used than b
	get("c") // evicts b
	assert.Equal(t, Stats{Hits: 1, Misses: 3, Bytes: 2 * size, Entries: 2}, c.Stats())
	get("a")
	assert.Equal(t, uint64(2), c.Stats().Hits, "a stayed")
	get("b")
	assert.Equal(t, uint64(4), c.Stats().Misses, "b was evicted and downloaded again")
	assert.Equal(t, 2, downloadFiles(t, c.dir))
}

func TestOversizeEntryIsServedButNotKept(t *testing.T) {
	s := newArtifactServer(t)
	body := makeTar(t, file{name: "big", body: strings.Repeat("x", 4096)})
	u := s.put("/big.tar", artifact{body: body, etag: `"big"`})
	c := newCache(t, s, int64(len(body))-1)
	for range 2 {
		got := mustFetch(t, c, Request{URL: u, CacheKey: "big"})
		assert.Len(t, got["big"].body, 4096)
	}
	assert.Equal(t, Stats{Misses: 2}, c.Stats())
	assert.Zero(t, downloadFiles(t, c.dir))
}

// flightWaiters is how many callers wait on the flight for key (no checksum).
func flightWaiters(c *Cache, key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fl := c.flights[flightKey{cacheKey: key}]; fl != nil {
		return len(fl.waiters)
	}
	return 0
}

// openGate makes the server hold every request until the returned func is called.
func (s *artifactServer) holdRequests(t *testing.T) (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

func TestConcurrentFetchesOfOneKeyDownloadOnce(t *testing.T) {
	s := newArtifactServer(t)
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprintf("kept=%v", !big), func(t *testing.T) {
			s.requests.Store(0)
			s.fulls.Store(0)
			body := makeTar(t, appFiles...)
			u := s.put("/shared.tar", artifact{body: body, etag: `"v1"`})
			maxBytes := int64(1 << 20)
			if big {
				maxBytes = 10
			}
			c := newCache(t, s, maxBytes)
			release := s.holdRequests(t)

			const callers = 8
			var wg sync.WaitGroup
			results := make([]map[string]member, callers)
			errs := make([]error, callers)
			for i := range callers {
				wg.Go(func() { results[i], errs[i] = fetch(t, c, Request{URL: u, CacheKey: "shared"}) })
			}
			require.Eventually(t, func() bool { return flightWaiters(c, "shared") == callers }, 10*time.Second, 5*time.Millisecond)
			release()
			wg.Wait()
			for i := range callers {
				require.NoError(t, errs[i])
				assert.Equal(t, "hello", results[i]["app/index.html"].body)
			}
			assert.Equal(t, int32(1), s.requests.Load())
			assert.Equal(t, uint64(1), c.Stats().Misses)
			s.mu.Lock()
			s.gate = nil
			s.mu.Unlock()
		})
	}
}

func TestAtMostFiveConcurrentDownloads(t *testing.T) {
	s := newArtifactServer(t)
	c := newCache(t, s, 1<<20)
	release := s.holdRequests(t)
	const fetches = 9
	var wg sync.WaitGroup
	errs := make([]error, fetches)
	for i := range fetches {
		u := s.put(fmt.Sprintf("/f%d.tar", i), artifact{body: makeTar(t, appFiles...), etag: `"x"`})
		key := ""
		if i%2 == 0 {
			key = fmt.Sprintf("k%d", i)
		}
		wg.Go(func() { _, errs[i] = fetch(t, c, Request{URL: u, CacheKey: key}) })
	}
	require.Eventually(t, func() bool { return s.active.Load() == MaxConcurrentDownloads }, 10*time.Second, 5*time.Millisecond)
	release()
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, int32(MaxConcurrentDownloads), s.maxActive.Load())
	assert.Equal(t, int32(fetches), s.fulls.Load())
}

func TestFetchErrors(t *testing.T) {
	s := newArtifactServer(t)
	forbidden := s.put("/forbidden", artifact{status: http.StatusForbidden})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	c := newCache(t, s, 1<<20)
	for _, tc := range []struct {
		name string
		req  Request
		err  string
	}{
		{name: "404", req: Request{URL: s.URL + "/missing?k=secret"}, err: "downloading " + s.URL + "/missing: unexpected status 404 Not Found"},
		{name: "403 keyed", req: Request{URL: forbidden + "?k=secret", CacheKey: "f"}, err: "downloading " + forbidden + ": unexpected status 403 Forbidden"},
		{name: "connection refused", req: Request{URL: closed.URL + "/x?k=secret"}, err: "downloading " + closed.URL + "/x: "},
		{name: "not http", req: Request{URL: "ftp://h/x"}, err: `invalid download url "ftp://h/x": want an absolute http or https url`},
		{name: "relative", req: Request{URL: "/x"}, err: `invalid download url "/x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fetch(t, c, tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

func TestCancelledFetchesStopTheDownload(t *testing.T) {
	s := newArtifactServer(t)
	u := s.put("/slow.tar", artifact{body: makeTar(t, appFiles...), etag: `"v1"`})
	c := newCache(t, s, 1<<20)
	s.holdRequests(t)

	for _, key := range []string{"", "slow"} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			rc, err := c.Fetch(ctx, Request{URL: u, CacheKey: key})
			if err == nil {
				rc.Close()
			}
			done <- err
		}()
		require.Eventually(t, func() bool { return s.active.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
		cancel()
		select {
		case err := <-done:
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatal("cancelled fetch did not return")
		}
		require.Eventually(t, func() bool { return s.active.Load() == 0 }, 10*time.Second, 5*time.Millisecond, "the server saw the request go away")
	}
	assert.Zero(t, downloadFiles(t, c.dir))
	assert.Equal(t, Stats{}, c.Stats())
}

func TestEntriesSurviveARestart(t *testing.T) {
	s := newArtifactServer(t)
	body := makeTar(t, appFiles...)
	u := s.put("/app.tar", artifact{body: body, etag: `"v1"`})
	dir := t.TempDir()
	c1, err := NewCache(dir, 1<<20, s.Client())
	require.NoError(t, err)
	mustFetch(t, c1, Request{URL: u, CacheKey: "app"})
	stray := dir + "/" + filePrefix + "stray"
	require.NoError(t, os.WriteFile(stray, []byte("left over"), 0o600))

	c2, err := NewCache(dir, 1<<20, s.Client())
	require.NoError(t, err)
	assert.Equal(t, Stats{Bytes: int64(len(body)), Entries: 1}, c2.Stats())
	assert.NoFileExists(t, stray)
	got := mustFetch(t, c2, Request{URL: u, CacheKey: "app"})
	assert.Equal(t, "hello", got["app/index.html"].body)
	assert.Equal(t, uint64(1), c2.Stats().Hits)

	c3, err := NewCache(dir, 10, s.Client())
	require.NoError(t, err)
	assert.Equal(t, Stats{}, c3.Stats(), "a smaller cap evicts on load")
	assert.Zero(t, downloadFiles(t, dir))
}

func TestEvictedEntryStaysReadableWhileOpen(t *testing.T) {
	s := newArtifactServer(t)
	a := makeTar(t, file{name: "a", body: strings.Repeat("a", 2000)})
	ua := s.put("/a.tar", artifact{body: a, etag: `"a"`})
	ub := s.put("/b.tar", artifact{body: makeTar(t, file{name: "b", body: strings.Repeat("b", 2000)}), etag: `"b"`})
	c := newCache(t, s, int64(len(a))+100)

	rc, err := c.Fetch(context.Background(), Request{URL: ua, CacheKey: "a"})
	require.NoError(t, err)
	defer rc.Close()
	mustFetch(t, c, Request{URL: ub, CacheKey: "b"}) // evicts a
	assert.Equal(t, 1, c.Stats().Entries)
	got := readTar(t, rc)
	assert.Len(t, got["a"].body, 2000)
}

func TestNewCacheValidates(t *testing.T) {
	_, err := NewCache("", 1, nil)
	assert.EqualError(t, err, "download cache dir must not be empty")
	_, err = NewCache(t.TempDir(), -1, nil)
	assert.EqualError(t, err, "download cache max bytes must not be negative, got -1")
	_, err = NewCache(t.TempDir(), 0, nil)
	assert.NoError(t, err)
}
