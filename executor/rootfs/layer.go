// Package rootfs builds the cell's preloaded busybox image: an OCI image layout tarball
// made from Debian's busybox-static, which containerd imports without a registry. Its
// layer pieces (Entry, WriteTar, BusyboxTree, ReadBusybox) are shared with the dev
// stack's image builder (drover.dev/devstack/images).
package rootfs

import (
	"archive/tar"
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// FixedTime is the modification time of everything in the image (and in every layer
// WriteTar writes), so builds are reproducible.
var FixedTime = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// User is the unprivileged user a busybox tree is made for: its name and its uid, which
// is its gid too; its home is /home/NAME.
type User struct {
	Name string
	ID   int
}

// VcapUser is the user apps run as in the cell's image.
var VcapUser = User{Name: "vcap", ID: 2000}

// validUserName is what a user name in /etc/passwd may be.
var validUserName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// validate names every rule u breaks.
func (u User) validate() error {
	var problems []string
	if !validUserName.MatchString(u.Name) || u.Name == "root" || u.Name == "nobody" {
		problems = append(problems, fmt.Sprintf("name %q must match %s and not be root or nobody", u.Name, validUserName))
	}
	if u.ID < 1 || u.ID > 65533 {
		problems = append(problems, fmt.Sprintf("id %d must be between 1 and 65533", u.ID))
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid busybox tree user: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Entry is one member of a layer tarball: a directory (Name ends in "/"), a regular file
// or a symlink, with its mode and owner.
type Entry struct {
	Name     string
	Typeflag byte
	Mode     int64
	UID, GID int
	Body     []byte
	Link     string
}

// Dir is the directory name (without a trailing slash) with mode, owned by root.
func Dir(name string, mode int64) Entry {
	return Entry{Name: name + "/", Typeflag: tar.TypeDir, Mode: mode}
}

// Symlink is a symlink name pointing at target.
func Symlink(name, target string) Entry {
	return Entry{Name: name, Typeflag: tar.TypeSymlink, Mode: 0o777, Link: target}
}

// File is the regular file name with mode and body, owned by root.
func File(name string, mode int64, body string) Entry {
	return Entry{Name: name, Typeflag: tar.TypeReg, Mode: mode, Body: []byte(body)}
}

// OwnedBy returns e owned by uid:gid.
func (e Entry) OwnedBy(uid, gid int) Entry {
	e.UID, e.GID = uid, gid
	return e
}

// BusyboxTree lists, in the order they are written, the entries of a busybox root file
// system for user: the directory skeleton (with user's home), /bin/busybox with one
// symlink per applet (sorted, deduplicated, busybox itself skipped), merged-usr style
// links so that /usr/bin/env, /sbin/ifconfig and friends resolve, and /etc/passwd,
// /etc/group (root, user, nobody), /etc/hosts and an empty /etc/resolv.conf. An applet
// that is not a plain file name is refused.
func BusyboxTree(busybox []byte, applets []string, user User) ([]Entry, error) {
	if err := user.validate(); err != nil {
		return nil, err
	}
	entries := []Entry{
		Dir("bin", 0o755), Dir("dev", 0o755), Dir("etc", 0o755), Dir("home", 0o755),
		Dir("home/"+user.Name, 0o755).OwnedBy(user.ID, user.ID),
		Dir("proc", 0o555), Dir("root", 0o700), Dir("sys", 0o555), Dir("tmp", 0o1777),
		Dir("usr", 0o755), Dir("usr/local", 0o755), Dir("usr/local/bin", 0o755),
		Dir("var", 0o755), Dir("var/tmp", 0o1777), Dir("var/www", 0o755),
		Symlink("sbin", "bin"), Symlink("usr/bin", "../bin"), Symlink("usr/sbin", "../bin"),
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Body: busybox},
	}
	sorted := append([]string(nil), applets...)
	sort.Strings(sorted)
	for i, a := range sorted {
		if a == "" || a == "." || a == ".." || strings.ContainsAny(a, "/\x00") {
			return nil, fmt.Errorf("invalid busybox applet name %q", a)
		}
		if a == "busybox" || (i > 0 && sorted[i-1] == a) {
			continue
		}
		entries = append(entries, Symlink("bin/"+a, "busybox"))
	}
	id := fmt.Sprint(user.ID)
	return append(entries,
		File("etc/passwd", 0o644, "root:x:0:0:root:/root:/bin/sh\n"+
			user.Name+":x:"+id+":"+id+":"+user.Name+":/home/"+user.Name+":/bin/sh\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"),
		File("etc/group", 0o644, "root:x:0:\n"+
			user.Name+":x:"+id+":\n"+
			"nogroup:x:65534:\n"),
		File("etc/hosts", 0o644, "127.0.0.1\tlocalhost\n"+
			"::1\tlocalhost ip6-localhost ip6-loopback\n"),
		File("etc/resolv.conf", 0o644, ""),
	), nil
}

// WriteTar writes entries, in order, as an uncompressed USTAR tar with FixedTime and no
// owner names, so the same entries always give the same bytes.
func WriteTar(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:     e.Name,
			Typeflag: e.Typeflag,
			Mode:     e.Mode,
			Uid:      e.UID,
			Gid:      e.GID,
			Size:     int64(len(e.Body)),
			Linkname: e.Link,
			ModTime:  FixedTime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.Name, err)
		}
		if _, err := tw.Write(e.Body); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
