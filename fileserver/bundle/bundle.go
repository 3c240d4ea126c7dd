// Package bundle packs a directory (the lifecycle bundle, a buildpack) into a
// deterministic gzip'd tar: the same tree always gives the same bytes, so the fileserver's
// ETag for a bundle changes only when its content does.
package bundle

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// entry is one file or directory of a bundle, named relative to the source directory.
type entry struct {
	name string // slash-separated; directories end in "/"
	path string // on disk
	mode fs.FileMode
	size int64
}

// Pack writes srcDir as a tgz to w. Entries are sorted by name, named relative to srcDir
// without a leading "./", directories included (with a trailing "/"), permission bits kept,
// mtime Unix 0, uid/gid 0 and no owner names. Only regular files and directories are packed:
// a symlink or any other file type is an error naming its path.
func Pack(srcDir string, w io.Writer) error {
	entries, err := collect(srcDir)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		if err := writeEntry(tw, e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("bundle: finishing tar: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("bundle: finishing gzip: %w", err)
	}
	return nil
}

// WriteFile packs srcDir into the file dst atomically: it writes a temporary file in dst's
// directory, syncs it and renames it over dst, so readers never see a partial bundle.
func WriteFile(srcDir, dst string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return fmt.Errorf("bundle: creating temp file for %s: %w", dst, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = Pack(srcDir, tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("bundle: chmod %s: %w", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("bundle: sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("bundle: close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("bundle: rename to %s: %w", dst, err)
	}
	return nil
}

// collect lists srcDir's tree (without srcDir itself) sorted by entry name.
func collect(srcDir string) ([]entry, error) {
	info, err := os.Stat(srcDir)
	if err != nil {
		return nil, fmt.Errorf("bundle: source directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("bundle: source %s is not a directory", srcDir)
	}
	var entries []entry
	err = filepath.WalkDir(srcDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("bundle: walking %s: %w", path, err)
		}
		if path == srcDir {
			return nil
		}
		rel, err := filepath.Rel(srcDir, path)
		if err != nil {
			return fmt.Errorf("bundle: naming %s: %w", path, err)
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("bundle: stat %s: %w", path, err)
		}
		e := entry{name: filepath.ToSlash(rel), path: path, mode: info.Mode()}
		switch {
		case info.Mode().IsRegular():
			e.size = info.Size()
		case info.IsDir():
			e.name += "/"
		case info.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("bundle: %s is a symlink: only regular files and directories can be packed", path)
		default:
			return fmt.Errorf("bundle: %s is a %s: only regular files and directories can be packed", path, info.Mode().Type())
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, nil
}

// writeEntry writes one entry's header (with the fixed owner and mtime) and content.
func writeEntry(tw *tar.Writer, e entry) error {
	hdr := &tar.Header{
		Name:    e.name,
		Mode:    int64(tarMode(e.mode)),
		ModTime: time.Unix(0, 0),
	}
	if e.mode.IsDir() {
		hdr.Typeflag = tar.TypeDir
	} else {
		hdr.Typeflag = tar.TypeReg
		hdr.Size = e.size
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("bundle: header for %s: %w", e.path, err)
	}
	if e.mode.IsDir() {
		return nil
	}
	f, err := os.Open(e.path)
	if err != nil {
		return fmt.Errorf("bundle: open %s: %w", e.path, err)
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("bundle: copying %s (did it change while packing?): %w", e.path, err)
	}
	return nil
}

// tarMode converts a Go file mode to the tar permission bits (including setuid, setgid and
// sticky).
func tarMode(m fs.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
