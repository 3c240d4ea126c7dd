package blobstore

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"time"

	"drover.dev/fileserver/resources"
)

// PackageEpoch is the modification time of every entry of an assembled package, so that
// the same files always give the same bytes.
var PackageEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// PackageKeyPrefix prefixes the key of every assembled package.
const PackageKeyPrefix = "packages/"

// PackageLimits caps a package upload.
type PackageLimits struct {
	// MaxBytes caps the listed files' total, any one zip entry and the zip's content.
	MaxBytes int64
	// MaxFiles caps the zip's entries.
	MaxFiles int
}

// Package is an assembled, stored package.
type Package struct {
	Info
	// ReceivedFiles and ReceivedBytes count the distinct contents taken from the upload.
	ReceivedFiles int   `json:"received_files"`
	ReceivedBytes int64 `json:"received_bytes"`
	// ReusedFiles counts the listed files whose content came from the pool.
	ReusedFiles int `json:"reused_files"`
}

// MissingResourceError: a listed file is neither in the upload nor in the pool.
type MissingResourceError struct{ Path, SHA1 string }

func (e *MissingResourceError) Error() string {
	return fmt.Sprintf("missing resource %s (sha1 %s)", e.Path, e.SHA1)
}

// BadUploadError: the upload is malformed (not a zip, content not matching its listing).
type BadUploadError struct{ Reason string }

func (e *BadUploadError) Error() string { return e.Reason }

// AssemblePackage takes the files of list (already checked by resources.DecodePackage)
// from app, a zip of the files the pool lacked (appSize 0: none), and from the pool, and
// stores the package zip (entries sorted by path, fixed mtime, listed modes) as blob
// "packages/<sha256>.zip". Received contents join the pool only once every listed file is
// accounted for: a refused upload stores nothing.
func (s *Store) AssemblePackage(list []resources.Resource, app io.ReaderAt, appSize int64, lim PackageLimits) (Package, error) {
	sizes := map[string]int64{}
	for _, r := range list {
		if size, ok := sizes[r.SHA1]; ok && size != r.Size {
			return Package{}, &BadUploadError{fmt.Sprintf("resource %s: sha1 %s listed with sizes %d and %d", r.Path, r.SHA1, size, r.Size)}
		}
		sizes[r.SHA1] = r.Size
	}
	received, err := s.receive(app, appSize, sizes, lim)
	defer func() {
		for _, sp := range received {
			sp.discard()
		}
	}()
	if err != nil {
		return Package{}, err
	}
	pkg := Package{ReceivedFiles: len(received)}
	for _, r := range list {
		if _, ok := received[r.SHA1]; ok {
			continue
		}
		if !s.HasResource(r.SHA1, r.Size) {
			return Package{}, &MissingResourceError{Path: r.Path, SHA1: r.SHA1}
		}
		pkg.ReusedFiles++
	}
	for sha1, sp := range received {
		pkg.ReceivedBytes += sp.size
		if err := sp.commit(s.poolPath(sha1)); err != nil {
			return Package{}, fmt.Errorf("pooling %s: %w", sha1, err)
		}
		delete(received, sha1)
	}
	info, err := s.storePackage(list)
	pkg.Info = info
	return pkg, err
}

// receive spools the zip entries whose content is listed, keyed by sha1.
func (s *Store) receive(app io.ReaderAt, appSize int64, sizes map[string]int64, lim PackageLimits) (map[string]*spooled, error) {
	received := map[string]*spooled{}
	if appSize == 0 {
		return received, nil
	}
	zr, err := zip.NewReader(app, appSize)
	if err != nil {
		return received, &BadUploadError{fmt.Sprintf("application: not a zip archive: %v", err)}
	}
	if len(zr.File) > lim.MaxFiles {
		return received, fmt.Errorf("application: %d zip entries exceed max_package_files %d: %w", len(zr.File), lim.MaxFiles, ErrTooLarge)
	}
	var total int64
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		if f.UncompressedSize64 > uint64(lim.MaxBytes) || total+int64(f.UncompressedSize64) > lim.MaxBytes {
			return received, fmt.Errorf("zip entry %s: %d bytes exceed max_package_bytes %d: %w", f.Name, f.UncompressedSize64, lim.MaxBytes, ErrTooLarge)
		}
		sp, err := s.spoolEntry(f)
		if err != nil {
			return received, err
		}
		total += sp.size
		want, listed := sizes[sp.sha1]
		switch {
		case !listed || received[sp.sha1] != nil:
			sp.discard()
		case want != sp.size:
			sp.discard()
			return received, &BadUploadError{fmt.Sprintf("zip entry %s: sha1 %s listed with size %d, got %d", f.Name, sp.sha1, want, sp.size)}
		default:
			received[sp.sha1] = sp
		}
	}
	return received, nil
}

// spoolEntry copies one zip entry to a temporary file; archive/zip refuses content
// longer than the declared size or with a wrong CRC.
func (s *Store) spoolEntry(f *zip.File) (*spooled, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, &BadUploadError{fmt.Sprintf("zip entry %s: %v", f.Name, err)}
	}
	defer rc.Close()
	sp, err := spool(s.tmp, rc, int64(f.UncompressedSize64))
	if errors.Is(err, zip.ErrFormat) || errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrAlgorithm) || errors.Is(err, ErrTooLarge) {
		return nil, &BadUploadError{fmt.Sprintf("zip entry %s: %v", f.Name, err)}
	}
	return sp, err
}

// storePackage writes the deterministic zip of list from the pool and stores it.
func (s *Store) storePackage(list []resources.Resource) (Info, error) {
	sorted := append([]resources.Resource(nil), list...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	sp, err := writeTemp(s.tmp, func(w io.Writer) error {
		zw := zip.NewWriter(w)
		for _, r := range sorted {
			if err := s.addEntry(zw, r); err != nil {
				return err
			}
		}
		return zw.Close()
	})
	if err != nil {
		return Info{}, fmt.Errorf("assembling package: %w", err)
	}
	key := PackageKeyPrefix + sp.sha256 + ".zip"
	if err := s.commitBlob(sp, key); err != nil {
		return Info{}, fmt.Errorf("storing package: %w", err)
	}
	return Info{Key: key, SHA256: sp.sha256, Size: sp.size}, nil
}

// addEntry copies one pool file into the zip under its listed path and mode.
func (s *Store) addEntry(zw *zip.Writer, r resources.Resource) error {
	mode, err := resources.ParseMode(r.Mode)
	if err != nil {
		return fmt.Errorf("resource %s: %w", r.Path, err)
	}
	src, err := os.Open(s.poolPath(r.SHA1))
	if err != nil {
		return err
	}
	defer src.Close()
	hdr := &zip.FileHeader{Name: r.Path, Method: zip.Deflate, Modified: PackageEpoch}
	hdr.SetMode(fs.FileMode(mode))
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	n, err := io.Copy(w, src)
	if err == nil && n != r.Size {
		err = fmt.Errorf("resource %s: pool content of sha1 %s has %d bytes, want %d", r.Path, r.SHA1, n, r.Size)
	}
	return err
}
