package bundle_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/bundle"
)

// tarEntry is what a test checks of one entry of a packed bundle.
type tarEntry struct {
	Name    string
	Type    byte
	Mode    int64
	Content string
}

// writeTree creates files (name → content) under dir; names ending in "/" are directories.
func writeTree(t *testing.T, dir string, files map[string]string, modes map[string]os.FileMode) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if name[len(name)-1] == '/' {
			require.NoError(t, os.MkdirAll(path, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	for name, mode := range modes {
		require.NoError(t, os.Chmod(filepath.Join(dir, filepath.FromSlash(name)), mode))
	}
}

// readTgz decodes a tgz and checks every header has the fixed owner and mtime.
func readTgz(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	var out []tarEntry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, int64(0), hdr.ModTime.Unix(), "mtime of %s", hdr.Name)
		require.Zero(t, hdr.Uid, "uid of %s", hdr.Name)
		require.Zero(t, hdr.Gid, "gid of %s", hdr.Name)
		require.Empty(t, hdr.Uname, "uname of %s", hdr.Name)
		require.Empty(t, hdr.Gname, "gname of %s", hdr.Name)
		content, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, tarEntry{Name: hdr.Name, Type: hdr.Typeflag, Mode: hdr.Mode, Content: string(content)})
	}
	return out
}

func pack(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, bundle.Pack(dir, &buf))
	return buf.Bytes()
}

func TestPackIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"b": "bee", "a/z": "zed", "a-c": "ac", "empty/": ""}, nil)
	first := pack(t, dir)

	// Different mtimes on disk must not change the bytes.
	later := time.Now().Add(time.Hour)
	require.NoError(t, filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		require.NoError(t, err)
		return os.Chtimes(path, later, later)
	}))
	require.Equal(t, first, pack(t, dir))

	// A content change does change them.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b"), []byte("BEE"), 0o644))
	require.NotEqual(t, first, pack(t, dir))
}

func TestPackRoundTrip(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir,
		map[string]string{"run": "#!/bin/sh\necho hi\n", "lib/data.txt": "data", "lib/sub/deep": "deep", "empty/": "", "a-c": "ac"},
		map[string]os.FileMode{"run": 0o755, "lib/data.txt": 0o600})

	require.Equal(t, []tarEntry{
		{Name: "a-c", Type: tar.TypeReg, Mode: 0o644, Content: "ac"},
		{Name: "empty/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "lib/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "lib/data.txt", Type: tar.TypeReg, Mode: 0o600, Content: "data"},
		{Name: "lib/sub/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "lib/sub/deep", Type: tar.TypeReg, Mode: 0o644, Content: "deep"},
		{Name: "run", Type: tar.TypeReg, Mode: 0o755, Content: "#!/bin/sh\necho hi\n"},
	}, readTgz(t, pack(t, dir)))
}

func TestPackRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"real": "x", "sub/": ""}, nil)
	link := filepath.Join(dir, "sub", "link")
	require.NoError(t, os.Symlink("../real", link))

	err := bundle.Pack(dir, io.Discard)
	require.Error(t, err)
	require.Contains(t, err.Error(), link)
	require.Contains(t, err.Error(), "symlink")
}

func TestPackRefusesMissingOrFileSource(t *testing.T) {
	dir := t.TempDir()
	require.ErrorContains(t, bundle.Pack(filepath.Join(dir, "nope"), io.Discard), "source directory")

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	require.ErrorContains(t, bundle.Pack(file, io.Discard), "is not a directory")
}

func TestWriteFile(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"builder": "#!/bin/sh\n"}, map[string]os.FileMode{"builder": 0o755})
	out := t.TempDir()
	dst := filepath.Join(out, "builder.tgz")

	require.NoError(t, os.WriteFile(dst, []byte("old"), 0o644))
	require.NoError(t, bundle.WriteFile(src, dst))
	data, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, pack(t, src), data)
	requireOnlyFiles(t, out, "builder.tgz")

	// A failing pack leaves dst as it was and no temp file behind.
	require.NoError(t, os.Symlink("builder", filepath.Join(src, "link")))
	require.ErrorContains(t, bundle.WriteFile(src, dst), "symlink")
	again, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, data, again)
	requireOnlyFiles(t, out, "builder.tgz")
}

// TestPackBuildpack packs a real buildpack of the tree (what droverctl and the dev stack
// register) and checks its bin/detect stays executable.
func TestPackBuildpack(t *testing.T) {
	var detect *tarEntry
	entries := readTgz(t, pack(t, filepath.Join("..", "..", "buildpacks", "busybox")))
	for i := range entries {
		if entries[i].Name == "bin/detect" {
			detect = &entries[i]
		}
	}
	require.NotNil(t, detect, "bin/detect missing from the busybox buildpack")
	require.Equal(t, int64(0o755), detect.Mode&0o777)
	require.Contains(t, detect.Content, "#!/bin/sh")
}

func requireOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	require.Equal(t, names, got)
}
