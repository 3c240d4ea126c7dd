package rootfs

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
)

// TestWriteTarImage: the stack tar becomes the image's one uncompressed layer, byte for
// byte, named by its digest, and the config's diff id is that digest.
func TestWriteTarImage(t *testing.T) {
	dir := t.TempDir()
	stack := filepath.Join(dir, "stack.tar")
	layer, err := WriteTar([]Entry{Dir("etc", 0o755), {Name: "etc/os-release", Typeflag: tar.TypeReg, Mode: 0o644, Body: []byte("ID=debian\n")}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(stack, layer, 0o644))

	image := filepath.Join(dir, "image.tar")
	require.NoError(t, EnsureTarImage(image, stack, "drover.local/rootfs/test:latest"))
	files := readLayout(t, image)
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(files["index.json"], &index))
	require.Len(t, index.Manifests, 1)
	require.Equal(t, "drover.local/rootfs/test:latest", index.Manifests[0].Annotations[ContainerdImageNameAnnotation])
	var manifest ocispec.Manifest
	require.NoError(t, json.Unmarshal(files[blobPath(index.Manifests[0].Digest)], &manifest))
	require.Len(t, manifest.Layers, 1)
	want := digest.FromBytes(layer)
	require.Equal(t, want, manifest.Layers[0].Digest)
	require.Equal(t, ocispec.MediaTypeImageLayer, manifest.Layers[0].MediaType)
	require.Equal(t, layer, files[blobPath(want)])
	var config ocispec.Image
	require.NoError(t, json.Unmarshal(files[blobPath(manifest.Config.Digest)], &config))
	require.Equal(t, []digest.Digest{want}, config.RootFS.DiffIDs)

	// Current: a second call leaves the file alone.
	before, err := os.Stat(image)
	require.NoError(t, err)
	require.NoError(t, EnsureTarImage(image, stack, "drover.local/rootfs/test:latest"))
	after, err := os.Stat(image)
	require.NoError(t, err)
	require.Equal(t, before.ModTime(), after.ModTime())

	require.ErrorContains(t, EnsureTarImage(image, filepath.Join(dir, "missing.tar"), "x"), "stack root filesystem")
}

// readLayout reads every regular file of an image layout tarball.
func readLayout(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			files[hdr.Name] = b
		}
	}
}
