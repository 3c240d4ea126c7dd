package rootfs

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// WriteTarImage writes an OCI image layout tarball whose one uncompressed layer is the root
// filesystem tar at rootfsTar (a stack built by scripts/stack.sh), named ref, to w. The
// layer is streamed from the file, not held in memory.
func WriteTarImage(w io.Writer, rootfsTar, ref string) error {
	d, size, err := digestFile(rootfsTar)
	if err != nil {
		return err
	}
	layer := blob{desc: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: d, Size: size}, file: rootfsTar}
	return writeSingleLayerImage(w, layer, d, ref, "drover mkrootfs: "+filepath.Base(rootfsTar), []string{"/bin/bash"})
}

// EnsureTarImage writes the image of rootfsTar (see WriteTarImage) to path unless path
// exists and is newer than rootfsTar; it writes a temporary file and renames it.
func EnsureTarImage(path, rootfsTar, ref string) error {
	src, err := os.Stat(rootfsTar)
	if err != nil {
		return fmt.Errorf("stack root filesystem: %w", err)
	}
	if dst, err := os.Stat(path); err == nil && dst.ModTime().After(src.ModTime()) && dst.Size() > src.Size() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op after the rename
	if err := WriteTarImage(f, rootfsTar, ref); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// digestFile is the sha256 digest and size of the file at path.
func digestFile(path string) (digest.Digest, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return digest.NewDigest(digest.SHA256, h), n, nil
}
