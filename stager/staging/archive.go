package staging

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Bounds of a buildpack archive.
const (
	MaxArchiveBytes    = 64 << 20
	MaxArchiveEntries  = 100000
	MaxFilenameLen     = 255
	maxArchiveNameRead = 4096
)

// ArchiveFormat is a buildpack archive's format, told by its magic bytes.
type ArchiveFormat string

// The archive formats a buildpack may come in.
const (
	FormatZip   ArchiveFormat = "zip"
	FormatTarGz ArchiveFormat = "tgz"
)

// ErrNoDetect is the error of an archive without bin/detect.
var ErrNoDetect = errors.New("buildpack archive has no bin/detect")

// ErrNoBuildStep is the error of an archive with bin/detect and no build step.
var ErrNoBuildStep = errors.New("buildpack archive has none of bin/compile, bin/supply, bin/finalize")

// InspectArchive checks a buildpack archive (zip or tar.gz): it must hold a top-level
// bin/detect and at least one of bin/compile, bin/supply, bin/finalize. It returns the
// format (the blob's extension).
func InspectArchive(b []byte) (ArchiveFormat, error) {
	if len(b) == 0 {
		return "", errors.New("buildpack archive is empty")
	}
	if len(b) > MaxArchiveBytes {
		return "", fmt.Errorf("buildpack archive is %d bytes, more than the limit of %d", len(b), MaxArchiveBytes)
	}
	var names []string
	var format ArchiveFormat
	var err error
	switch {
	case bytes.HasPrefix(b, []byte("PK\x03\x04")) || bytes.HasPrefix(b, []byte("PK\x05\x06")):
		format = FormatZip
		names, err = zipNames(b)
	case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
		format = FormatTarGz
		names, err = tarGzNames(b)
	default:
		return "", errors.New("buildpack archive is neither a zip nor a tar.gz")
	}
	if err != nil {
		return "", fmt.Errorf("buildpack archive (%s): %w", format, err)
	}
	files := map[string]bool{}
	for _, n := range names {
		files[strings.TrimPrefix(path.Clean("/"+n), "/")] = true
	}
	if !files["bin/detect"] {
		return "", ErrNoDetect
	}
	if !files["bin/compile"] && !files["bin/supply"] && !files["bin/finalize"] {
		return "", ErrNoBuildStep
	}
	return format, nil
}

// zipNames lists a zip's regular files.
func zipNames(b []byte) ([]string, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	if len(zr.File) > MaxArchiveEntries {
		return nil, fmt.Errorf("more than %d entries", MaxArchiveEntries)
	}
	var names []string
	for _, f := range zr.File {
		if f.Mode().IsRegular() {
			names = append(names, f.Name)
		}
	}
	return names, nil
}

// tarGzNames lists a tar.gz's regular files (and hard links), reading at most
// MaxArchiveBytes*8 of decompressed data.
func tarGzNames(b []byte) ([]string, error) {
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(io.LimitReader(gz, 8*MaxArchiveBytes))
	var names []string
	for n := 0; ; n++ {
		if n > MaxArchiveEntries {
			return nil, fmt.Errorf("more than %d entries", MaxArchiveEntries)
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeLink {
			names = append(names, h.Name)
		}
	}
}
