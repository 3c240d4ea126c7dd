package blobstore

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key  string
		want string
	}{
		{"droplets/app-1_v2.tgz", ""},
		{"a", ""},
		{strings.Repeat("a", 256), ""},
		{strings.Repeat("a", 257), "longer than 256"},
		{"", "is required"},
		{"a//b", "empty segment"},
		{"/a", "empty segment"},
		{"a/", "empty segment"},
		{"a/../b", `".." segment`},
		{"./a", `"." segment`},
		{"a b", "character ' ' not allowed"},
		{"a%2f", "character '%' not allowed"},
		{"é", "not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			err := ValidateKey(tt.key)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// FuzzValidateKey: an accepted key stays inside the blob directory.
func FuzzValidateKey(f *testing.F) {
	for _, seed := range []string{"a/b", "..", "a/./b", "a\x00b", "droplets/x.tgz", "a//", strings.Repeat("x/", 200)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if ValidateKey(key) != nil {
			return
		}
		rel, err := filepath.Rel("/root", filepath.Join("/root", key))
		require.NoError(t, err)
		require.Equal(t, key, filepath.ToSlash(rel))
		require.LessOrEqual(t, len(key), MaxKeyBytes)
	})
}

func TestPutAndOpen(t *testing.T) {
	s, root := newStore(t)
	content := "droplet bytes"
	md := md5.Sum([]byte(content))
	sum := sha256.Sum256([]byte(content))
	info, err := s.Put("droplets/a.tgz", strings.NewReader(content), Expected{MD5: md[:], SHA256: hex.EncodeToString(sum[:])}, 100)
	require.NoError(t, err)
	require.Equal(t, Info{Key: "droplets/a.tgz", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}, info)

	f, fi, err := s.OpenBlob("droplets/a.tgz")
	require.NoError(t, err)
	got, _ := io.ReadAll(f)
	f.Close()
	require.Equal(t, content, string(got))
	require.Equal(t, int64(len(content)), fi.Size())
	require.True(t, s.Exists("droplets/a.tgz"))

	_, err = s.Put("droplets/a.tgz", strings.NewReader("v2"), Expected{}, 100)
	require.NoError(t, err, "overwrite")
	data, err := os.ReadFile(filepath.Join(root, "blobs", "droplets", "a.tgz"))
	require.NoError(t, err)
	require.Equal(t, "v2", string(data))
	require.Empty(t, files(t, filepath.Join(root, "tmp")))

	for _, key := range []string{"droplets/missing", "droplets", "droplets/a.tgz/x", "../x"} {
		_, _, err = s.OpenBlob(key)
		require.ErrorIs(t, err, ErrNotFound, key)
	}
}

// failingReader yields some bytes and then an error, like a cut-off request body.
type failingReader struct{ sent bool }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.sent {
		return 0, io.ErrUnexpectedEOF
	}
	r.sent = true
	return copy(p, "partial"), nil
}

func TestPutRefusalsStoreNothing(t *testing.T) {
	badMD5 := md5.Sum([]byte("other"))
	tests := []struct {
		name   string
		key    string
		body   io.Reader
		want   Expected
		limit  int64
		errMsg string
	}{
		{"md5 mismatch", "k", strings.NewReader("content"), Expected{MD5: badMD5[:]}, 100, "checksum mismatch: Content-MD5"},
		{"sha256 mismatch", "k", strings.NewReader("content"), Expected{SHA256: strings.Repeat("0", 64)}, 100, "checksum mismatch: X-Checksum-Sha256"},
		{"cut-off body", "k", &failingReader{}, Expected{}, 100, "unexpected EOF"},
		{"over limit", "k", strings.NewReader("content"), Expected{}, 3, "exceeds 3 bytes"},
		{"bad key", "../k", strings.NewReader("content"), Expected{}, 100, `".." segment`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := newStore(t)
			_, err := s.Put(tt.key, tt.body, tt.want, tt.limit)
			require.ErrorContains(t, err, tt.errMsg)
			require.Empty(t, files(t, root), "nothing stored, no temp file left")
		})
	}
	var ce *ChecksumError
	s, _ := newStore(t)
	_, err := s.Put("k", strings.NewReader("x"), Expected{MD5: badMD5[:]}, 10)
	require.True(t, errors.As(err, &ce))
}

func TestParseContentMD5(t *testing.T) {
	sum, err := ParseContentMD5("1B2M2Y8AsgTpgAmY7PhCfg==")
	require.NoError(t, err)
	require.Len(t, sum, 16)
	sum, err = ParseContentMD5("")
	require.NoError(t, err)
	require.Nil(t, sum)
	_, err = ParseContentMD5("nope")
	require.ErrorContains(t, err, "Content-MD5: want the base64 of 16 bytes")
}

func TestOpenClearsLeftoverTempFiles(t *testing.T) {
	_, root := newStore(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "tmp", "upload-1"), []byte("x"), 0o600))
	_, err := Open(root)
	require.NoError(t, err)
	require.Empty(t, files(t, filepath.Join(root, "tmp")))
}

// unread fails the test when read: a refused key must not consume the body.
type unread struct{ t *testing.T }

func (u unread) Read([]byte) (int, error) {
	u.t.Error("body read")
	return 0, io.EOF
}

// TestPutConflicts: a key under a blob, or at a directory of blobs, is a
// *ConflictError before the body is read, and stores nothing.
func TestPutConflicts(t *testing.T) {
	s, root := newStore(t)
	_, err := s.Put("packages/x.zip", strings.NewReader("zip"), Expected{}, 100)
	require.NoError(t, err)

	tests := []struct {
		key, blob, want string
	}{
		{"packages/x.zip/y", "packages/x.zip", "blob key packages/x.zip/y: packages/x.zip is a blob, so it cannot hold other blobs"},
		{"packages/x.zip/y/z", "packages/x.zip", "blob key packages/x.zip/y/z: packages/x.zip is a blob, so it cannot hold other blobs"},
		{"packages", "", "blob key packages: is a directory of other blobs (packages/...)"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			var conflict *ConflictError
			require.ErrorAs(t, s.CheckKey(tt.key), &conflict)
			_, err := s.Put(tt.key, unread{t}, Expected{}, 100)
			require.ErrorAs(t, err, &conflict)
			require.Equal(t, ConflictError{Key: tt.key, Blob: tt.blob}, *conflict)
			require.EqualError(t, err, tt.want)
			require.Equal(t, []string{"blobs/packages/x.zip"}, files(t, root))
		})
	}
	require.NoError(t, s.CheckKey("packages/y.zip"))
	require.NoError(t, s.CheckKey("other/x.zip/y"))
	require.ErrorContains(t, s.CheckKey("a/../b"), `".." segment`)
}

// conflictingReader makes a conflicting blob when first read, as a concurrent upload
// finishing first would.
type conflictingReader struct {
	t    *testing.T
	s    *Store
	key  string
	done bool
}

func (c *conflictingReader) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	c.done = true
	_, err := c.s.Put(c.key, strings.NewReader("first"), Expected{}, 100)
	require.NoError(c.t, err)
	return copy(p, "second"), nil
}

// TestPutConflictWhileSpooling: a conflict that appears while the body is spooled is a
// *ConflictError too (not an internal error), and leaves no temporary file.
func TestPutConflictWhileSpooling(t *testing.T) {
	s, root := newStore(t)
	var conflict *ConflictError
	_, err := s.Put("a/b", &conflictingReader{t: t, s: s, key: "a"}, Expected{}, 100)
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, ConflictError{Key: "a/b", Blob: "a"}, *conflict)

	_, err = s.Put("c", &conflictingReader{t: t, s: s, key: "c/d"}, Expected{}, 100)
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, ConflictError{Key: "c"}, *conflict)
	require.ElementsMatch(t, []string{"blobs/a", "blobs/c/d"}, files(t, root))
}
