package commands

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"drover.dev/fileserver/bundle"
)

// maxBuildpackArchive bounds what droverctl reads or packs as one buildpack.
const maxBuildpackArchive = 256 << 20

// buildpackArchive reads PATH for buildpack create/update: an archive (.zip, .tgz,
// .tar.gz) is sent as it is; a directory is packed as a tar.gz in memory, its files'
// modes kept (bin/ scripts stay executable). It returns the bytes and the file name.
func buildpackArchive(path string) ([]byte, string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", usagef("buildpack PATH: %v", err)
	}
	if info.IsDir() {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, "", usagef("buildpack PATH: %v", err)
		}
		data, err := packDir(path)
		if err != nil {
			return nil, "", usagef("packing buildpack directory %s: %v", path, err)
		}
		return data, filepath.Base(abs) + ".tgz", nil
	}
	name := filepath.Base(path)
	if !hasArchiveSuffix(name) {
		return nil, "", usagef("buildpack PATH %s must be a directory or a .zip, .tgz or .tar.gz archive", path)
	}
	if info.Size() > maxBuildpackArchive {
		return nil, "", usagef("buildpack archive %s is %d bytes: at most %d", path, info.Size(), maxBuildpackArchive)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", usagef("buildpack PATH: %v", err)
	}
	return data, name, nil
}

// hasArchiveSuffix reports whether name ends in .zip, .tgz or .tar.gz (any case).
func hasArchiveSuffix(name string) bool {
	lower := strings.ToLower(name)
	for _, suffix := range []string{".zip", ".tgz", ".tar.gz"} {
		if strings.HasSuffix(lower, suffix) {
			return true
		}
	}
	return false
}

// packDir packs dir as a deterministic tar.gz (fileserver/bundle: paths relative to dir,
// modes kept) of at most maxBuildpackArchive bytes.
func packDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	if err := bundle.Pack(dir, &buf); err != nil {
		return nil, err
	}
	if buf.Len() > maxBuildpackArchive {
		return nil, fmt.Errorf("the archive is more than %d bytes", maxBuildpackArchive)
	}
	return buf.Bytes(), nil
}
