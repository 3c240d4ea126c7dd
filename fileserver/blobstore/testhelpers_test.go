package blobstore

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/resources"
)

// newStore opens a store in a fresh temporary directory.
func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	s, err := Open(root)
	require.NoError(t, err)
	return s, root
}

// files lists every regular file under dir (relative, slash-separated).
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	}))
	return out
}

// res describes content at fn.
func res(fn, content string) resources.Resource {
	sum := sha1.Sum([]byte(content))
	return resources.Resource{Path: fn, SHA1: hex.EncodeToString(sum[:]), Size: int64(len(content)), Mode: "0644"}
}

// zipOf builds a zip of name → content.
func zipOf(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range entries {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
