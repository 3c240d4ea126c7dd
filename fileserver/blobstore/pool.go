package blobstore

import (
	"os"
	"path/filepath"

	"drover.dev/fileserver/resources"
)

// poolPath is the pool file of a sha1: pool/<aa>/<bb>/<sha1>.
func (s *Store) poolPath(sha1 string) string {
	return filepath.Join(s.pool, sha1[0:2], sha1[2:4], sha1)
}

// HasResource reports whether the pool holds content with this sha1 and size.
func (s *Store) HasResource(sha1 string, size int64) bool {
	if !resources.IsSHA1(sha1) {
		return false
	}
	fi, err := os.Stat(s.poolPath(sha1))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// Match returns the entries of list whose content the pool already holds, in order.
func (s *Store) Match(list []resources.Resource) []resources.Resource {
	known := []resources.Resource{}
	for _, r := range list {
		if s.HasResource(r.SHA1, r.Size) {
			known = append(known, r)
		}
	}
	return known
}
