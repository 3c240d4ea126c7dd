package builder

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// TarGz writes a gzip-compressed tar whose member names are all relative ("./x/y"):
// directory trees (modes and owners kept, symlinks kept as symlinks, other special files
// left out) and small in-memory files.
type TarGz struct {
	gz      *gzip.Writer
	tw      *tar.Writer
	seen    map[string]bool
	Skipped []string // special files left out (sockets, devices, fifos)
}

// NewTarGz starts an archive on w; Close finishes it (it does not close w). It
// compresses for speed: droplets and caches are written at every staging and read once
// per cell.
func NewTarGz(w io.Writer) *TarGz {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: never an error
	return &TarGz{gz: gz, tw: tar.NewWriter(gz), seen: map[string]bool{}}
}

// memberName is the archive name for rel (slash-separated, relative) under prefix ("."
// or "./dir"); directories end in "/".
func memberName(prefix, rel string, dir bool) string {
	name := prefix
	if rel != "." {
		name = prefix + "/" + rel
	}
	if dir {
		name += "/"
	}
	return name
}

// SafeMemberName reports whether name is a relative archive name that stays inside the
// extraction directory.
func SafeMemberName(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) {
		return false
	}
	clean := path.Clean(name)
	return clean != ".." && !strings.HasPrefix(clean, "../")
}

// AddDir adds the tree at dir under prefix ("." for the archive's root, or "./NAME").
// A missing dir is added as an empty directory.
func (t *TarGz) AddDir(dir, prefix string) error {
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return t.addEmptyDir(prefix)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case info.Mode().IsRegular(), info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			t.Skipped = append(t.Skipped, p)
			return nil
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = memberName(prefix, filepath.ToSlash(rel), info.IsDir())
		hdr.Uname, hdr.Gname = "", ""
		return t.write(hdr, p)
	})
}

func (t *TarGz) addEmptyDir(prefix string) error {
	return t.write(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/", Mode: 0o755, ModTime: time.Now()}, "")
}

// AddFile adds a regular file with content data at name ("./NAME").
func (t *TarGz) AddFile(name string, data []byte, mode int64) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Now()}
	if err := t.checkName(hdr.Name); err != nil {
		return err
	}
	if err := t.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := t.tw.Write(data)
	return err
}

// AddFileFrom adds the regular file at src as name, keeping its mode.
func (t *TarGz) AddFileFrom(src, name string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	hdr, err := tar.FileInfoHeader(info, "")
	if err != nil {
		return err
	}
	hdr.Name, hdr.Uname, hdr.Gname = name, "", ""
	return t.write(hdr, src)
}

func (t *TarGz) checkName(name string) error {
	if !SafeMemberName(name) {
		return fmt.Errorf("archive member %q is not a safe relative name", name)
	}
	if t.seen[name] {
		return fmt.Errorf("archive member %q added twice", name)
	}
	t.seen[name] = true
	return nil
}

func (t *TarGz) write(hdr *tar.Header, src string) error {
	if err := t.checkName(hdr.Name); err != nil {
		return err
	}
	if err := t.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", hdr.Name, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(t.tw, f, hdr.Size); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

// Close finishes the tar and gzip streams.
func (t *TarGz) Close() error {
	if err := t.tw.Close(); err != nil {
		return err
	}
	return t.gz.Close()
}

// WrittenFile is a file written atomically, with its checksum and size.
type WrittenFile struct {
	SHA256 string
	Size   int64
}

// WriteFileAtomic writes dst through fill (to a temp file beside dst, renamed at the
// end) and returns its sha256 and size.
func WriteFileAtomic(dst string, fill func(io.Writer) error) (WrittenFile, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return WrittenFile{}, err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return WrittenFile{}, err
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	c := &countingWriter{}
	if err := fill(io.MultiWriter(f, h, c)); err != nil {
		f.Close()
		return WrittenFile{}, err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return WrittenFile{}, err
	}
	if err := f.Close(); err != nil {
		return WrittenFile{}, err
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return WrittenFile{}, err
	}
	return WrittenFile{SHA256: hex.EncodeToString(h.Sum(nil)), Size: c.n}, nil
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
