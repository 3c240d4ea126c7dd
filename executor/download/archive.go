package download

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"drover.dev/executor/internal/archivepolicy"
)

// format is the kind of archive a download holds.
type format int

// The archive formats the downloader accepts (formatUnknown is refused).
const (
	formatUnknown format = iota
	formatTar
	formatGzip
	formatZip
)

// tarBlock is the size of a tar header block.
const tarBlock = 512

// detectFormat recognises an archive by its first bytes (at least 512 for a tar).
func detectFormat(head []byte) format {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return formatGzip
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return formatZip
	case isTarHeader(head):
		return formatTar
	}
	return formatUnknown
}

// isTarHeader reports whether block starts with a tar header (ustar, gnu or v7, whose
// checksum matches) or with the zero block of an empty archive.
func isTarHeader(block []byte) bool {
	if len(block) < tarBlock {
		return false
	}
	block = block[:tarBlock]
	if bytes.Equal(block, make([]byte, tarBlock)) {
		return true
	}
	if bytes.HasPrefix(block[257:], []byte("ustar")) {
		return true
	}
	want, err := strconv.ParseUint(strings.Trim(string(block[148:156]), " \x00"), 8, 32)
	if err != nil {
		return false
	}
	var sum uint64
	for i, b := range block {
		if i >= 148 && i < 156 {
			b = ' '
		}
		sum += uint64(b)
	}
	return sum == want
}

// readCloser joins a reader with the function that releases what it reads from.
type readCloser struct {
	io.Reader
	close func() error
}

// Close releases the underlying resources.
func (r *readCloser) Close() error { return r.close() }

// openTar returns the archive in src as a tar stream; release is called exactly once,
// on error or when the stream is closed. artifactURL names the download in errors.
func openTar(src *io.SectionReader, release func() error, artifactURL string) (io.ReadCloser, error) {
	head := make([]byte, tarBlock)
	n, err := src.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		_ = release()
		return nil, fmt.Errorf("reading %s: %w", displayURL(artifactURL), err)
	}
	notArchive := fmt.Errorf("%s is not a tar, tgz or zip archive", displayURL(artifactURL))
	switch detectFormat(head[:n]) {
	case formatTar:
		return &readCloser{Reader: io.NewSectionReader(src, 0, src.Size()), close: release}, nil
	case formatGzip:
		gz, err := gzip.NewReader(io.NewSectionReader(src, 0, src.Size()))
		if err != nil {
			_ = release()
			return nil, fmt.Errorf("%w: %v", notArchive, err)
		}
		buf := bufio.NewReaderSize(gz, 64<<10)
		if inner, _ := buf.Peek(tarBlock); !isTarHeader(inner) {
			_ = release()
			return nil, notArchive
		}
		return &readCloser{Reader: buf, close: release}, nil
	case formatZip:
		zr, err := zip.NewReader(src, src.Size())
		if err != nil {
			_ = release()
			return nil, fmt.Errorf("%w: %v", notArchive, err)
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(zipToTar(pw, zr)) }()
		return &readCloser{Reader: pr, close: func() error {
			_ = pr.Close()
			return release()
		}}, nil
	}
	_ = release()
	return nil, notArchive
}

// zipToTar writes every entry of zr to w as a tar archive, keeping directories, file
// modes, modification times and symlinks. Names are kept as they are (backslashes made
// slashes): the extraction applies archivepolicy to every entry, so an escaping name is
// refused there alike for a tar and a zip.
func zipToTar(w io.Writer, zr *zip.Reader) error {
	tw := tar.NewWriter(w)
	for _, f := range zr.File {
		if err := copyZipEntry(tw, f); err != nil {
			return err
		}
	}
	return tw.Close()
}

// copyZipEntry writes one zip entry to tw.
func copyZipEntry(tw *tar.Writer, f *zip.File) error {
	name := strings.ReplaceAll(f.Name, "\\", "/")
	mode := f.Mode()
	hdr := &tar.Header{Name: name, Mode: int64(mode.Perm()), ModTime: f.Modified, Format: tar.FormatPAX}
	switch {
	case mode.IsDir() || strings.HasSuffix(name, "/"):
		hdr.Typeflag, hdr.Name = tar.TypeDir, strings.TrimSuffix(name, "/")+"/"
		if mode.Perm() == 0 {
			hdr.Mode = 0o755
		}
		return tw.WriteHeader(hdr)
	case mode&fs.ModeSymlink != 0:
		target, err := readZipEntry(f, archivepolicy.MaxPathBytes+1)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, string(target)
		return tw.WriteHeader(hdr)
	case !mode.IsRegular():
		return fmt.Errorf("zip entry %q: unsupported file type %s", f.Name, mode.Type())
	}
	if mode.Perm() == 0 {
		hdr.Mode = 0o644
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, int64(f.UncompressedSize64)
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	defer rc.Close()
	if _, err := io.Copy(tw, rc); err != nil {
		return fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	return nil
}

// readZipEntry reads a small entry (a symlink target) of at most limit bytes.
func readZipEntry(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		return nil, fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	return b, nil
}
