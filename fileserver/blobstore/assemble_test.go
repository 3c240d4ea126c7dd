package blobstore

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/fileserver/resources"
)

var limits = PackageLimits{MaxBytes: 1 << 20, MaxFiles: 100}

func assemble(t *testing.T, s *Store, list []resources.Resource, app []byte) (Package, error) {
	t.Helper()
	return s.AssemblePackage(list, bytes.NewReader(app), int64(len(app)), limits)
}

func TestAssemblePackageReusesThePool(t *testing.T) {
	s, root := newStore(t)
	index, start := res("index.html", "<h1>hi</h1>"), res("bin/start.sh", "echo hi")
	start.Mode = "0755"
	list := []resources.Resource{index, start}

	first, err := assemble(t, s, list, zipOf(t, map[string]string{"index.html": "<h1>hi</h1>", "bin/start.sh": "echo hi"}))
	require.NoError(t, err)
	require.Equal(t, 2, first.ReceivedFiles)
	require.Equal(t, int64(18), first.ReceivedBytes)
	require.Equal(t, 0, first.ReusedFiles)
	require.Equal(t, "packages/"+first.SHA256+".zip", first.Key)
	require.Equal(t, list, s.Match([]resources.Resource{index, res("x", "unknown"), start}))

	again, err := assemble(t, s, []resources.Resource{start, index}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, again.ReceivedFiles)
	require.Equal(t, 2, again.ReusedFiles)
	require.Equal(t, first.Info, again.Info, "deterministic regardless of list order")

	f, fi, err := s.OpenBlob(first.Key)
	require.NoError(t, err)
	defer f.Close()
	zr, err := zip.NewReader(f, fi.Size())
	require.NoError(t, err)
	require.Len(t, zr.File, 2)
	require.Equal(t, "bin/start.sh", zr.File[0].Name, "sorted by path")
	require.Equal(t, os.FileMode(0o755), zr.File[0].Mode().Perm())
	require.Equal(t, os.FileMode(0o644), zr.File[1].Mode().Perm())
	require.True(t, zr.File[1].Modified.Equal(PackageEpoch))
	rc, err := zr.File[1].Open()
	require.NoError(t, err)
	body, _ := io.ReadAll(rc)
	require.Equal(t, "<h1>hi</h1>", string(body))
	require.Empty(t, files(t, filepath.Join(root, "tmp")))
}

func TestAssemblePackageRefusalsStoreNothing(t *testing.T) {
	a := res("a.txt", "aaaa")
	tests := []struct {
		name string
		list []resources.Resource
		app  func(t *testing.T) []byte
		lim  PackageLimits
		want string
	}{
		{"missing resource", []resources.Resource{a, res("b.txt", "bbb")},
			func(t *testing.T) []byte { return zipOf(t, map[string]string{"a.txt": "aaaa"}) }, limits, "missing resource b.txt (sha1 "},
		{"not a zip", []resources.Resource{a}, func(*testing.T) []byte { return []byte("garbage") }, limits, "application: not a zip archive"},
		{"entry over the byte cap", []resources.Resource{a},
			func(t *testing.T) []byte { return zipOf(t, map[string]string{"a.txt": "aaaa"}) }, PackageLimits{MaxBytes: 3, MaxFiles: 10}, "zip entry a.txt: 4 bytes exceed max_package_bytes 3"},
		{"entries over the file cap", []resources.Resource{a},
			func(t *testing.T) []byte { return zipOf(t, map[string]string{"a.txt": "aaaa", "b": "b"}) }, PackageLimits{MaxBytes: 100, MaxFiles: 1}, "2 zip entries exceed max_package_files 1"},
		{"size differs from listing", []resources.Resource{{Path: "a.txt", SHA1: a.SHA1, Size: 5, Mode: "0644"}},
			func(t *testing.T) []byte { return zipOf(t, map[string]string{"a.txt": "aaaa"}) }, limits, "listed with size 5, got 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := newStore(t)
			app := tt.app(t)
			_, err := s.AssemblePackage(tt.list, bytes.NewReader(app), int64(len(app)), tt.lim)
			require.ErrorContains(t, err, tt.want)
			require.Empty(t, files(t, root), "nothing pooled or stored")
		})
	}
}

func TestAssemblePackageOneChangedFile(t *testing.T) {
	s, _ := newStore(t)
	_, err := assemble(t, s, []resources.Resource{res("a", "1"), res("b", "2")}, zipOf(t, map[string]string{"a": "1", "b": "2"}))
	require.NoError(t, err)
	pkg, err := assemble(t, s, []resources.Resource{res("a", "1"), res("b", "22")}, zipOf(t, map[string]string{"b": "22"}))
	require.NoError(t, err)
	require.Equal(t, 1, pkg.ReceivedFiles)
	require.Equal(t, int64(2), pkg.ReceivedBytes)
	require.Equal(t, 1, pkg.ReusedFiles)
}
