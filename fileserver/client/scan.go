package client

import (
	"archive/zip"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"drover.dev/fileserver/resources"
)

// Resource describes one file of an app directory (see resources.Resource).
type Resource = resources.Resource

// ScanDir lists the regular files under dir (symlinks and .git/ skipped), sorted by
// Path, with their sha1, size and mode ("0755" when any execute bit is set, else "0644").
func ScanDir(dir string) ([]Resource, error) {
	var list []Resource
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && p != dir {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum, size, err := sha1File(p)
		if err != nil {
			return err
		}
		mode := "0644"
		if info.Mode().Perm()&0o111 != 0 {
			mode = "0755"
		}
		list = append(list, Resource{Path: filepath.ToSlash(rel), SHA1: sum, Size: size, Mode: mode})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning %s: %w", dir, err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Path < list[j].Path })
	return list, nil
}

// sha1File returns the hex SHA-1 and size of a file.
func sha1File(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha1.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// WriteZip writes a zip of just files (by Path, relative to dir) to w.
func WriteZip(w io.Writer, dir string, files []Resource) error {
	zw := zip.NewWriter(w)
	for _, r := range files {
		if err := addFile(zw, dir, r); err != nil {
			return err
		}
	}
	return zw.Close()
}

// addFile copies one file into the zip.
func addFile(zw *zip.Writer, dir string, r Resource) error {
	if err := resources.CheckPath(r.Path); err != nil {
		return fmt.Errorf("zip: fn %q: %w", r.Path, err)
	}
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(r.Path)))
	if err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	defer f.Close()
	zf, err := zw.CreateHeader(&zip.FileHeader{Name: r.Path, Method: zip.Deflate})
	if err != nil {
		return err
	}
	if _, err := io.Copy(zf, f); err != nil {
		return fmt.Errorf("zip: %s: %w", r.Path, err)
	}
	return nil
}

// Missing returns the files the server does not have: those of all whose sha1 and
// size are not in known.
func Missing(all, known []Resource) []Resource {
	type id struct {
		sha1 string
		size int64
	}
	have := make(map[id]bool, len(known))
	for _, r := range known {
		have[id{r.SHA1, r.Size}] = true
	}
	var missing []Resource
	for _, r := range all {
		if !have[id{r.SHA1, r.Size}] {
			missing = append(missing, r)
		}
	}
	return missing
}
