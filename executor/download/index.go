package download

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// filePrefix starts the name of every download file the cache writes in its dir.
const filePrefix = "download-"

// indexFile lists the cache entries, so they survive a restart.
const indexFile = "index.json"

// entry is one cached download.
type entry struct {
	Key          string            `json:"key"`
	File         string            `json:"file"`
	Size         int64             `json:"size"`
	ETag         string            `json:"etag,omitempty"`
	LastModified string            `json:"last_modified,omitempty"`
	Checksums    map[string]string `json:"checksums"`
	Used         uint64            `json:"used"`
}

// path is the absolute path of a file in the cache dir.
func (c *Cache) path(name string) string { return filepath.Join(c.dir, name) }

// storeLocked makes d the entry for key (replacing any old one) when it fits and can be
// revalidated; otherwise d's file is unlinked at once and lives on only while open.
func (c *Cache) storeLocked(key string, d download, sum checksum) {
	if old := c.entries[key]; old != nil {
		c.removeLocked(old)
	}
	if d.size > c.maxBytes || !d.validators.present() {
		_ = os.Remove(d.file.Name())
		c.saveLocked()
		return
	}
	for c.bytes+d.size > c.maxBytes {
		c.removeLocked(c.leastRecentlyUsedLocked())
	}
	e := &entry{
		Key:          key,
		File:         filepath.Base(d.file.Name()),
		Size:         d.size,
		ETag:         d.validators.etag,
		LastModified: d.validators.lastModified,
		Checksums:    map[string]string{},
	}
	if !sum.none() {
		e.Checksums[sum.alg] = d.digest
	}
	c.entries[key] = e
	c.bytes += e.Size
	c.touchLocked(e)
	c.saveLocked()
}

// leastRecentlyUsedLocked is the entry used longest ago (the cache must not be empty).
func (c *Cache) leastRecentlyUsedLocked() *entry {
	var lru *entry
	for _, e := range c.entries {
		if lru == nil || e.Used < lru.Used {
			lru = e
		}
	}
	return lru
}

// touchLocked marks e as just used.
func (c *Cache) touchLocked(e *entry) {
	c.clock++
	e.Used = c.clock
}

// removeLocked drops e and unlinks its file (open readers keep their data).
func (c *Cache) removeLocked(e *entry) {
	if c.entries[e.Key] != e {
		return
	}
	delete(c.entries, e.Key)
	c.bytes -= e.Size
	_ = os.Remove(c.path(e.File))
}

// saveLocked writes the index atomically. It is best effort: a lost index only costs
// downloads after a restart.
func (c *Cache) saveLocked() {
	list := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		list = append(list, e)
	}
	data, err := json.Marshal(list)
	if err != nil {
		return
	}
	tmp := c.path(indexFile + ".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return
	}
	_ = os.Rename(tmp, c.path(indexFile))
}

// load reads the index left by an earlier cache, keeps the entries whose files are intact,
// evicts down to maxBytes and removes every other download file in the dir.
func (c *Cache) load() error {
	data, err := os.ReadFile(c.path(indexFile))
	var list []*entry
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("reading download cache index: %w", err)
	default:
		if json.Unmarshal(data, &list) != nil {
			list = nil // a corrupt index only costs downloads
		}
	}
	for _, e := range list {
		if e == nil || e.Key == "" || c.entries[e.Key] != nil || !strings.HasPrefix(e.File, filePrefix) || filepath.Base(e.File) != e.File {
			continue
		}
		if fi, err := os.Stat(c.path(e.File)); err != nil || fi.Size() != e.Size {
			continue
		}
		if e.Checksums == nil {
			e.Checksums = map[string]string{}
		}
		c.entries[e.Key] = e
		c.bytes += e.Size
		c.clock = max(c.clock, e.Used)
	}
	for c.bytes > c.maxBytes {
		c.removeLocked(c.leastRecentlyUsedLocked())
	}
	names, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("reading download cache dir: %w", err)
	}
	kept := map[string]bool{}
	for _, e := range c.entries {
		kept[e.File] = true
	}
	for _, de := range names {
		if strings.HasPrefix(de.Name(), filePrefix) && !kept[de.Name()] {
			_ = os.Remove(c.path(de.Name()))
		}
	}
	c.saveLocked()
	return nil
}
