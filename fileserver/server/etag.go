package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"sync"
	"syscall"
	"time"
)

// maxETags bounds the ETag cache; it is emptied when full.
const maxETags = 10000

// etagCache remembers the quoted hex SHA-256 of files by name, inode, size and mtime,
// so a file is hashed once until it changes. The inode catches a blob replaced by
// rename with the same size within one tick of the file system's coarse mtime clock.
type etagCache struct {
	mu      sync.Mutex
	entries map[string]etagEntry
}

type etagEntry struct {
	ino   uint64
	size  int64
	mtime time.Time
	etag  string
}

// inode is fi's inode number, 0 where the platform does not say.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

func newETagCache() *etagCache { return &etagCache{entries: map[string]etagEntry{}} }

// ETag returns the quoted SHA-256 of f (described by fi, cached under name), hashing
// it when unknown and leaving f's offset at 0.
func (c *etagCache) ETag(name string, f io.ReadSeeker, fi fs.FileInfo) (string, error) {
	c.mu.Lock()
	e, ok := c.entries[name]
	c.mu.Unlock()
	if ok && e.ino == inode(fi) && e.size == fi.Size() && e.mtime.Equal(fi.ModTime()) {
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
	c.entries[name] = etagEntry{ino: inode(fi), size: fi.Size(), mtime: fi.ModTime(), etag: etag}
	c.mu.Unlock()
	return etag, nil
}
