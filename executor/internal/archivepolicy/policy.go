// Package archivepolicy decides which entries of an archive may be extracted into a
// directory. Tar and zip downloads (a zip is turned into a tar stream first) go through
// the same rule, so an archive that would write or link outside its destination fails
// the same way whatever its format, with an error naming the entry.
package archivepolicy

import (
	"archive/tar"
	"fmt"
	"path"
	"strings"
)

// MaxPathBytes bounds an entry's name and link target (Linux's PATH_MAX).
const MaxPathBytes = 4096

// Entry is an accepted archive entry.
type Entry struct {
	// Name is the entry's path relative to the destination, cleaned; "" is the
	// destination itself.
	Name string
	// HardLink is, for a hard link, the cleaned path (relative to the destination) of
	// the entry it links to.
	HardLink string
}

// Check applies the policy to one entry extracted into dest (an absolute path in the
// container). It refuses, naming the entry and the rule:
//   - a name or link target longer than MaxPathBytes, or holding a NUL byte;
//   - an absolute name, or one with a ".." component;
//   - a symlink whose target, resolved from the entry's directory, is outside dest
//     (an absolute target is fine when it lies under dest);
//   - a hard link to an absolute name, a name with "..", or dest itself.
//
// The check is lexical: it keeps archives well-behaved. What keeps the host safe is that
// extraction resolves every path inside the container's root.
func Check(dest string, hdr *tar.Header) (Entry, error) {
	dest = path.Clean("/" + dest)
	name, err := relativeName(hdr.Name)
	if err != nil {
		return Entry{}, fmt.Errorf("archive entry %q: its name %w", hdr.Name, err)
	}
	if name == "" && hdr.Typeflag != tar.TypeDir {
		return Entry{}, fmt.Errorf("archive entry %q: its name is the destination directory but it is not a directory", hdr.Name)
	}
	entry := Entry{Name: name}
	switch hdr.Typeflag {
	case tar.TypeSymlink:
		if err := checkSymlink(dest, name, hdr.Linkname); err != nil {
			return Entry{}, fmt.Errorf("archive entry %q: symlink target %q %w", hdr.Name, hdr.Linkname, err)
		}
	case tar.TypeLink:
		target, err := relativeName(hdr.Linkname)
		if err == nil && target == "" {
			err = fmt.Errorf("is the destination directory")
		}
		if err != nil {
			return Entry{}, fmt.Errorf("archive entry %q: hard link target %q %w", hdr.Name, hdr.Linkname, err)
		}
		entry.HardLink = target
	}
	return entry, nil
}

// relativeName cleans an entry name that must stay under the destination.
func relativeName(name string) (string, error) {
	if err := checkBounds(name); err != nil {
		return "", err
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("is an absolute path")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("has a \"..\" component")
		}
	}
	return strings.TrimPrefix(path.Clean("/"+name), "/"), nil
}

// checkSymlink refuses a target that points outside dest from the link at name.
func checkSymlink(dest, name, target string) error {
	if target == "" {
		return fmt.Errorf("is empty")
	}
	if err := checkBounds(target); err != nil {
		return err
	}
	resolved := path.Clean(target)
	if !path.IsAbs(target) {
		resolved = path.Join(dest, path.Dir(name), target)
	}
	if !within(dest, resolved) {
		return fmt.Errorf("points outside %s", dest)
	}
	return nil
}

// within reports whether p is dest or under it (both clean and absolute).
func within(dest, p string) bool {
	return dest == "/" || p == dest || strings.HasPrefix(p, dest+"/")
}

func checkBounds(s string) error {
	if len(s) > MaxPathBytes {
		return fmt.Errorf("is longer than %d bytes", MaxPathBytes)
	}
	if strings.ContainsRune(s, 0) {
		return fmt.Errorf("holds a NUL byte")
	}
	return nil
}
