package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"sync"
	"time"
)

// maxETags bounds the ETag cache; it is emptied when full.
const maxETags = 10000

// etagCache remembers the quoted hex SHA-256 of files by name, size and mtime, so a
// file is hashed once until it changes.
type etagCache struct {
	mu      sync.Mutex
	entries map[string]etagEntry
}

type etagEntry struct {
	size  int64
	mtime time.Time
	etag  string
}

func newETagCache() *etagCache { return &etagCache{entries: map[string]etagEntry{}} }

// ETag returns the quoted SHA-256 of f (described by fi, cached under name), hashing
// it when unknown and leaving f's offset at 0.
func (c *etagCache) ETag(name string, f io.ReadSeeker, fi fs.FileInfo) (string, error) {
	c.mu.Lock()
	e, ok := c.entries[name]
	c.mu.Unlock()
	if ok && e.size == fi.Size() && e.mtime.Equal(fi.ModTime()) {
		return e.etag, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	etag := `"` + hex.EncodeToString(h.Sum(nil)) + `"`
	c.mu.Lock()
	if len(c.entries) >= maxETags {
		c.entries = map[string]etagEntry{}
	}
	c.entries[name] = etagEntry{size: fi.Size(), mtime: fi.ModTime(), etag: etag}
	c.mu.Unlock()
	return etag, nil
}
