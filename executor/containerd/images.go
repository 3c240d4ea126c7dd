package containerd

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
)

// preloaded returns the unpacked image of preloaded:name, importing it first.
// Imports are serialised by imageMu (they are local and quick); registry pulls are not.
func (r *Runtime) preloaded(ctx context.Context, name string) (containerd.Image, error) {
	r.imageMu.Lock()
	defer r.imageMu.Unlock()
	return r.preloadedImage(ctx, name)
}

// preloadedImage imports the configured OCI image of name once, keyed by the digest of
// its index, and unpacks it into the snapshotter.
func (r *Runtime) preloadedImage(ctx context.Context, name string) (containerd.Image, error) {
	path := r.cfg.PreloadedRootFSes[name]
	id, err := imageIdentity(path)
	if err != nil {
		return nil, fmt.Errorf("preloaded rootfs %q (%s): %w", name, path, err)
	}
	imageName := "drover.local/preloaded/" + name + ":sha256-" + id
	img, err := r.client.GetImage(ctx, imageName)
	if err != nil && !errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("look up image %s: %w", imageName, err)
	}
	if err != nil {
		if img, err = r.importImage(ctx, path, imageName); err != nil {
			return nil, fmt.Errorf("import preloaded rootfs %q (%s): %w", name, path, err)
		}
		r.logger.Info("imported-preloaded-rootfs", "name", name, "path", path, "image", imageName)
	}
	return img, r.ensureUnpacked(ctx, img)
}

// importImage imports the OCI tarball or layout directory at path under imageName and
// drops the other names the archive carries.
func (r *Runtime) importImage(ctx context.Context, path, imageName string) (containerd.Image, error) {
	rd, err := openImageArchive(path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	imgs, err := r.client.Import(ctx, rd, containerd.WithIndexName(imageName))
	if err != nil {
		return nil, err
	}
	for _, img := range imgs {
		if img.Name != imageName {
			if err := r.client.ImageService().Delete(ctx, img.Name); err != nil && !errdefs.IsNotFound(err) {
				r.logger.Warn("delete-imported-image-name-failed", "image", img.Name, "error", err)
			}
		}
	}
	stored, err := r.client.ImageService().Get(ctx, imageName)
	if err != nil {
		return nil, err
	}
	stored.Labels = map[string]string{ownerLabel: r.cfg.Namespace}
	if _, err := r.client.ImageService().Update(ctx, stored, "labels"); err != nil {
		return nil, err
	}
	return r.client.GetImage(ctx, imageName)
}

func (r *Runtime) ensureUnpacked(ctx context.Context, img containerd.Image) error {
	ok, err := img.IsUnpacked(ctx, r.cfg.Snapshotter)
	if err != nil {
		return fmt.Errorf("check unpacked %s: %w", img.Name(), err)
	}
	if ok {
		return nil
	}
	if err := img.Unpack(ctx, r.cfg.Snapshotter); err != nil {
		return fmt.Errorf("unpack %s: %w", img.Name(), err)
	}
	return nil
}

// imageIdentity is the hex sha256 of the archive's index.json (which names every
// manifest by digest), or of the whole file when it has none (docker archives).
func imageIdentity(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if info.IsDir() {
		index, err := os.ReadFile(filepath.Join(path, "index.json"))
		if err != nil {
			return "", fmt.Errorf("not an OCI image layout: %w", err)
		}
		return sha256Hex(index), nil
	}
	rd, err := openImageArchive(path)
	if err != nil {
		return "", err
	}
	defer rd.Close()
	tr := tar.NewReader(rd)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read image tarball: %w", err)
		}
		if filepath.Clean(hdr.Name) == "index.json" {
			index, err := io.ReadAll(tr)
			if err != nil {
				return "", err
			}
			return sha256Hex(index), nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// openImageArchive returns a tar stream of the image at path: the file itself (gunzipped
// if needed) or, for an OCI layout directory, a tar of it made on the fly.
func openImageArchive(path string) (io.ReadCloser, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return tarDirectory(path), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, err
		}
		return readCloser{Reader: zr, close: f.Close}, nil
	}
	return readCloser{Reader: br, close: f.Close}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// tarDirectory streams a tar of the regular files and directories under dir.
func tarDirectory(dir string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil || rel == "." {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if !info.Mode().IsRegular() && !info.IsDir() {
				return nil
			}
			hdr, err := tar.FileInfoHeader(info, "")
			if err != nil {
				return err
			}
			hdr.Name = filepath.ToSlash(rel)
			if info.IsDir() {
				hdr.Name += "/"
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if info.IsDir() {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}
