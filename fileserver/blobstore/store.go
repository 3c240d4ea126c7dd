// Package blobstore keeps the fileserver's blobs on disk: keyed blobs (app packages,
// droplets) written atomically with checksums verified, the content-addressed resource
// pool (by sha1), and the deterministic assembly of app packages from the pool.
//
// Layout under the root: blobs/<key>, pool/<aa>/<bb>/<sha1>, tmp/ (uploads in flight).
package blobstore

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Store is a blob directory.
type Store struct {
	blobs, pool, tmp string
}

// Open creates (if needed) and opens the blob directory root. Leftover temporary files
// of a previous run are removed.
func Open(root string) (*Store, error) {
	s := &Store{blobs: filepath.Join(root, "blobs"), pool: filepath.Join(root, "pool"), tmp: filepath.Join(root, "tmp")}
	for _, dir := range []string{s.blobs, s.pool, s.tmp} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("blob directory: %w", err)
		}
	}
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return nil, fmt.Errorf("blob directory: %w", err)
	}
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(s.tmp, e.Name()))
	}
	return s, nil
}

// TempDir is where uploads in flight live.
func (s *Store) TempDir() string { return s.tmp }

// Expected holds the checksums an upload must match; empty fields are not checked.
type Expected struct {
	// MD5 is the raw digest (from a base64 Content-MD5 header).
	MD5 []byte
	// SHA256 is the hex digest (from X-Checksum-Sha256).
	SHA256 string
}

// ParseContentMD5 decodes a base64 Content-MD5 header value ("" gives nil).
func ParseContentMD5(v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	sum, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(sum) != 16 {
		return nil, fmt.Errorf("Content-MD5: want the base64 of 16 bytes, got %q", v)
	}
	return sum, nil
}

// ChecksumError is a mismatch between an expected and the received checksum.
type ChecksumError struct {
	Algorithm, Want, Got string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("checksum mismatch: %s want %s, got %s", e.Algorithm, e.Want, e.Got)
}

// Info describes a stored blob.
type Info struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Put stores r under key, replacing any blob there atomically. The content is written
// to a temporary file, checked against want, synced and renamed into place: on any
// error (bad key, a *ConflictError, read error such as a cut-off body, over limit,
// mismatch) nothing is stored and no temporary file remains.
func (s *Store) Put(key string, r io.Reader, want Expected, limit int64) (Info, error) {
	if err := s.CheckKey(key); err != nil {
		return Info{}, err
	}
	sp, err := spool(s.tmp, r, limit)
	if err != nil {
		return Info{}, err
	}
	if err := want.check(sp); err != nil {
		sp.discard()
		return Info{}, err
	}
	if err := s.commitBlob(sp, key); err != nil {
		return Info{}, err
	}
	return Info{Key: key, SHA256: sp.sha256, Size: sp.size}, nil
}

// commitBlob renames sp into place as blob key. A conflict that arose while the
// content was spooled (another upload made a parent segment a blob, or key a
// directory) is a *ConflictError.
func (s *Store) commitBlob(sp *spooled, key string) error {
	err := sp.commit(s.blobPath(key))
	if err == nil {
		return nil
	}
	var conflict *ConflictError
	if errors.As(s.CheckKey(key), &conflict) {
		return conflict
	}
	return fmt.Errorf("storing blob %s: %w", key, err)
}

// check compares the received digests with the expected ones.
func (e Expected) check(sp *spooled) error {
	if e.MD5 != nil && !bytes.Equal(e.MD5, sp.md5) {
		return &ChecksumError{Algorithm: "Content-MD5", Want: base64.StdEncoding.EncodeToString(e.MD5), Got: base64.StdEncoding.EncodeToString(sp.md5)}
	}
	if e.SHA256 != "" && !strings.EqualFold(e.SHA256, sp.sha256) {
		return &ChecksumError{Algorithm: "X-Checksum-Sha256", Want: e.SHA256, Got: sp.sha256}
	}
	return nil
}

// ErrNotFound is returned by OpenBlob for a key without a blob.
var ErrNotFound = errors.New("blob not found")

// OpenBlob opens the blob at key for reading, with its file information (the caller
// closes it). A missing blob or bad key is ErrNotFound.
func (s *Store) OpenBlob(key string) (*os.File, fs.FileInfo, error) {
	if ValidateKey(key) != nil {
		return nil, nil, ErrNotFound
	}
	f, err := os.Open(s.blobPath(key))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = ErrNotFound
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// Exists reports whether a blob is stored at key.
func (s *Store) Exists(key string) bool {
	f, _, err := s.OpenBlob(key)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// blobPath is the file of a valid key.
func (s *Store) blobPath(key string) string {
	return filepath.Join(s.blobs, filepath.FromSlash(key))
}

func dirOf(path string) string { return filepath.Dir(path) }

// CreateTemp creates a scratch file in tmp/ (for an upload being parsed); the caller
// removes it.
func (s *Store) CreateTemp() (*os.File, error) {
	return os.CreateTemp(s.tmp, "scratch-*")
}
