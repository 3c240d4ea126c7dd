package rootfs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "crypto/sha256" // registers sha256 for go-digest
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// DefaultBusyboxRef is the name the cell gives its preloaded busybox image.
const DefaultBusyboxRef = "drover.local/rootfs/busybox:latest"

// ContainerdImageNameAnnotation is the index annotation containerd's importer names the
// image by.
const ContainerdImageNameAnnotation = "io.containerd.image.name"

// imagePath is the PATH of processes in the image.
const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// WriteBusyboxImage writes an OCI image layout tarball of a busybox rootfs, made from the
// static busybox binary at busyboxPath and named ref, to w. The same busybox and ref
// always give the same bytes.
func WriteBusyboxImage(w io.Writer, busyboxPath, ref string) error {
	busybox, applets, err := ReadBusybox(busyboxPath)
	if err != nil {
		return err
	}
	return writeImage(w, busybox, applets, ref)
}

// EnsureBusyboxImage makes the file at path hold the busybox image (see WriteBusyboxImage),
// replacing it atomically when it is missing or differs (another busybox, ref or builder).
func EnsureBusyboxImage(path, busyboxPath, ref string) error {
	var buf bytes.Buffer
	if err := WriteBusyboxImage(&buf, busyboxPath, ref); err != nil {
		return err
	}
	if current, err := os.ReadFile(path); err == nil && bytes.Equal(current, buf.Bytes()) {
		return nil
	}
	return writeFileAtomically(path, buf.Bytes())
}

// ReadBusybox reads the static busybox binary at busyboxPath and asks it for its
// applets (`busybox --list`), the inputs of BusyboxTree.
func ReadBusybox(busyboxPath string) ([]byte, []string, error) {
	if busyboxPath == "" {
		return nil, nil, fmt.Errorf("busybox path must not be empty")
	}
	busybox, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, nil, fmt.Errorf("reading busybox: %w", err)
	}
	out, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("listing applets of %s: %w", busyboxPath, err)
	}
	applets := strings.Fields(string(out))
	if len(applets) == 0 {
		return nil, nil, fmt.Errorf("%s --list printed no applets", busyboxPath)
	}
	return busybox, applets, nil
}

// blob is one content-addressed file of the layout.
type blob struct {
	desc ocispec.Descriptor
	data []byte
	// file, when set, holds the blob's bytes instead of data (a large layer).
	file string
}

// newBlob describes data as a blob of mediaType.
func newBlob(mediaType string, data []byte) blob {
	return blob{desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}, data: data}
}

// newJSONBlob marshals v into a blob of mediaType.
func newJSONBlob(mediaType string, v any) (blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return blob{}, err
	}
	return newBlob(mediaType, data), nil
}

// writeImage writes the image layout tarball for busybox and its applets.
func writeImage(w io.Writer, busybox []byte, applets []string, ref string) error {
	entries, err := BusyboxTree(busybox, applets, VcapUser)
	if err != nil {
		return err
	}
	layerTar, err := WriteTar(entries)
	if err != nil {
		return err
	}
	layerGz, err := gzipDeterministic(layerTar)
	if err != nil {
		return err
	}
	layer := newBlob(ocispec.MediaTypeImageLayerGzip, layerGz)
	return writeSingleLayerImage(w, layer, digest.FromBytes(layerTar), ref, "drover mkrootfs: busybox-static", []string{"sh"})
}

// writeSingleLayerImage writes an image layout tarball of one layer (diffID is the digest
// of its uncompressed tar) named ref, with a fixed creation time.
func writeSingleLayerImage(w io.Writer, layer blob, diffID digest.Digest, ref, createdBy string, cmd []string) error {
	if ref == "" {
		return fmt.Errorf("image ref must not be empty")
	}
	platform := ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"}
	created := FixedTime
	config, err := newJSONBlob(ocispec.MediaTypeImageConfig, ocispec.Image{
		Created:  &created,
		Platform: platform,
		Config: ocispec.ImageConfig{
			Env: []string{imagePath},
			Cmd: cmd,
		},
		RootFS:  ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		History: []ocispec.History{{Created: &created, CreatedBy: createdBy}},
	})
	if err != nil {
		return err
	}
	manifest, err := newJSONBlob(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    config.desc,
		Layers:    []ocispec.Descriptor{layer.desc},
	})
	if err != nil {
		return err
	}
	manifestDesc := manifest.desc
	manifestDesc.Platform = &platform
	manifestDesc.Annotations = map[string]string{
		ocispec.AnnotationRefName:     ref,
		ContainerdImageNameAnnotation: ref,
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return err
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}
	return writeLayout(w, layout, index, []blob{config, layer, manifest})
}

// writeLayout writes the outer tarball: oci-layout, index.json and the blobs.
func writeLayout(w io.Writer, layout, index []byte, blobs []blob) error {
	tw := tar.NewWriter(w)
	header := func(name string, size int64) error {
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: FixedTime, Format: tar.FormatUSTAR})
	}
	file := func(name string, data []byte) error {
		if err := header(name, int64(len(data))); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	copyFile := func(name, path string, size int64) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := header(name, size); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, f, size); err != nil {
			return fmt.Errorf("copying %s into the image: %w", path, err)
		}
		return nil
	}
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: FixedTime, Format: tar.FormatUSTAR})
	}
	if err := file(ocispec.ImageLayoutFile, layout); err != nil {
		return err
	}
	if err := file(ocispec.ImageIndexFile, index); err != nil {
		return err
	}
	if err := dir(ocispec.ImageBlobsDir + "/"); err != nil {
		return err
	}
	if err := dir(ocispec.ImageBlobsDir + "/sha256/"); err != nil {
		return err
	}
	for _, b := range blobs {
		var err error
		if b.file != "" {
			err = copyFile(blobPath(b.desc.Digest), b.file, b.desc.Size)
		} else {
			err = file(blobPath(b.desc.Digest), b.data)
		}
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// blobPath is where a blob lives in the layout.
func blobPath(d digest.Digest) string {
	return ocispec.ImageBlobsDir + "/" + d.Algorithm().String() + "/" + d.Encoded()
}

// gzipDeterministic compresses data without a name or time in the gzip header.
func gzipDeterministic(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	gw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := gw.Write(data); err != nil {
		return nil, err
	}
	if err := gw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeFileAtomically writes data to a temp file next to path and renames it into place.
func writeFileAtomically(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // a no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
