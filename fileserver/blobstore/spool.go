package blobstore

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
)

// ErrTooLarge is returned (wrapped) when content exceeds its limit.
var ErrTooLarge = errors.New("too large")

// spooled is content written to a temporary file in tmp/, synced and closed, with its
// digests; commit renames it into place, discard removes it.
type spooled struct {
	path   string
	size   int64
	sha1   string
	sha256 string
	md5    []byte
}

// spool copies r into a new temporary file in dir, hashing as it goes, and syncs it.
// More than limit bytes is ErrTooLarge; any failure leaves no file behind.
func spool(dir string, r io.Reader, limit int64) (*spooled, error) {
	return writeTemp(dir, func(w io.Writer) error {
		n, err := io.Copy(w, io.LimitReader(r, limit+1))
		if err == nil && n > limit {
			err = fmt.Errorf("content exceeds %d bytes: %w", limit, ErrTooLarge)
		}
		return err
	})
}

// writeTemp creates a temporary file in dir, lets write fill it (hashing what it
// writes), and syncs and closes it. Any failure leaves no file behind.
func writeTemp(dir string, write func(io.Writer) error) (*spooled, error) {
	f, err := os.CreateTemp(dir, "upload-*")
	if err != nil {
		return nil, err
	}
	s := &spooled{path: f.Name()}
	h1, h256, hmd5 := sha1.New(), sha256.New(), md5.New()
	counter := &countingWriter{}
	err = write(io.MultiWriter(f, h1, h256, hmd5, counter))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(s.path)
		return nil, err
	}
	s.size, s.sha1, s.sha256, s.md5 = counter.n, hexSum(h1), hexSum(h256), hmd5.Sum(nil)
	return s, nil
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// commit atomically renames the spooled file to dst, creating dst's directory.
func (s *spooled) commit(dst string) error {
	if err := os.MkdirAll(dirOf(dst), 0o755); err != nil {
		s.discard()
		return err
	}
	if err := os.Rename(s.path, dst); err != nil {
		s.discard()
		return err
	}
	return syncDir(dirOf(dst))
}

// discard removes the temporary file.
func (s *spooled) discard() { _ = os.Remove(s.path) }

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
