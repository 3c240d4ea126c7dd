package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds one download, request and body together.
const DefaultTimeout = 10 * time.Minute

// MaxConcurrentDownloads is how many downloads run at once; more wait for a slot.
const MaxConcurrentDownloads = 5

// Cache is the cached downloader. It is safe for concurrent use.
type Cache struct {
	dir      string
	maxBytes int64
	client   *http.Client
	timeout  time.Duration
	slots    chan struct{}

	mu      sync.Mutex
	entries map[string]*entry
	flights map[flightKey]*flight
	clock   uint64
	bytes   int64
	hits    uint64
	misses  uint64
}

// Stats says how the cache has been doing since it was created.
type Stats struct {
	// Hits counts fetches served from the cache after the server answered 304.
	Hits uint64
	// Misses counts full downloads (one per download, however many callers shared it).
	Misses uint64
	// Bytes is the size of the cached entries on disk.
	Bytes int64
	// Entries is the number of cached entries.
	Entries int
}

// NewCache returns a cache that keeps at most maxBytes of downloads in dir (created if
// missing; entries left there by an earlier cache are kept when the index still lists
// them). client does the HTTP requests (nil means a default client); every download is
// bounded by DefaultTimeout, and by client.Timeout too when that is set.
func NewCache(dir string, maxBytes int64, client *http.Client) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("download cache dir must not be empty")
	}
	if maxBytes < 0 {
		return nil, fmt.Errorf("download cache max bytes must not be negative, got %d", maxBytes)
	}
	if client == nil {
		client = &http.Client{}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating download cache dir: %w", err)
	}
	c := &Cache{
		dir:      dir,
		maxBytes: maxBytes,
		client:   client,
		timeout:  DefaultTimeout,
		slots:    make(chan struct{}, MaxConcurrentDownloads),
		entries:  map[string]*entry{},
		flights:  map[flightKey]*flight{},
	}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Hits: c.hits, Misses: c.misses, Bytes: c.bytes, Entries: len(c.entries)}
}

// Fetch downloads req.URL (or serves it from the cache after revalidation), verifies its
// checksum and returns the archive (tar, tgz or zip) as a tar stream. The caller closes it.
func (c *Cache) Fetch(ctx context.Context, req Request) (io.ReadCloser, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	sum, _ := parseChecksum(req.ChecksumAlgorithm, req.ChecksumValue)
	var res result
	if req.CacheKey == "" {
		res = c.fetchUncached(ctx, req, sum)
	} else {
		res = c.fetchShared(ctx, req, sum)
	}
	if res.err != nil {
		return nil, res.err
	}
	return openTar(res.section, res.release, req.URL)
}

// result is a downloaded file as one caller sees it, or the error that stopped it.
type result struct {
	section *io.SectionReader
	release func() error
	err     error
}

// fetchUncached downloads to a temporary file that disappears when the stream is closed.
func (c *Cache) fetchUncached(ctx context.Context, req Request, sum checksum) result {
	d, err := c.get(ctx, req, sum, validators{})
	if err != nil {
		return result{err: err}
	}
	c.mu.Lock()
	c.misses++
	c.mu.Unlock()
	_ = os.Remove(d.file.Name())
	return share(d.file, d.size, 1)[0]
}

// fetchKeyed revalidates or downloads the entry for req.CacheKey and returns an open file
// with the archive (already checksum-verified) and its size.
func (c *Cache) fetchKeyed(ctx context.Context, req Request, sum checksum) (*os.File, int64, error) {
	c.mu.Lock()
	e := c.entries[req.CacheKey]
	var cached *os.File
	var v validators
	if e != nil {
		if f, err := os.Open(c.path(e.File)); err == nil {
			cached, v = f, validators{etag: e.ETag, lastModified: e.LastModified}
		} else {
			c.removeLocked(e)
		}
	}
	c.mu.Unlock()

	d, err := c.get(ctx, req, sum, v)
	if err != nil {
		closeFile(cached)
		return nil, 0, err
	}
	if d.notModified {
		if err := c.verifyCached(e, cached, sum, req.URL); err != nil {
			closeFile(cached)
			return nil, 0, err
		}
		c.mu.Lock()
		c.hits++
		if c.entries[req.CacheKey] == e {
			c.touchLocked(e)
			c.saveLocked()
		}
		c.mu.Unlock()
		return cached, e.Size, nil
	}
	closeFile(cached)
	c.mu.Lock()
	c.misses++
	c.storeLocked(req.CacheKey, d, sum)
	c.mu.Unlock()
	return d.file, d.size, nil
}

// verifyCached checks a cached file against the requested checksum, hashing it once per
// algorithm and remembering the digest in the entry.
func (c *Cache) verifyCached(e *entry, f *os.File, sum checksum, artifactURL string) error {
	if sum.none() {
		return nil
	}
	c.mu.Lock()
	have, known := e.Checksums[sum.alg]
	c.mu.Unlock()
	if !known {
		h := sum.newHash()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, e.Size)); err != nil {
			return fmt.Errorf("reading cached %s: %w", displayURL(artifactURL), err)
		}
		have = hexSum(h)
		c.mu.Lock()
		e.Checksums[sum.alg] = have
		c.mu.Unlock()
	}
	return sum.verifyHex(have, artifactURL)
}

// share hands out n readers of f; the last one released closes f (n = 0 closes it now).
func share(f *os.File, size int64, n int) []result {
	if n == 0 {
		_ = f.Close()
		return nil
	}
	var refs atomic.Int32
	refs.Store(int32(n))
	out := make([]result, n)
	for i := range out {
		var once sync.Once
		out[i] = result{section: io.NewSectionReader(f, 0, size), release: func() error {
			var err error
			once.Do(func() {
				if refs.Add(-1) == 0 {
					err = f.Close()
				}
			})
			return err
		}}
	}
	return out
}

// closeFile closes f when it is open.
func closeFile(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}
