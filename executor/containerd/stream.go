package containerd

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"syscall"

	"drover.dev/executor/internal/archivepolicy"
	"golang.org/x/sys/unix"
)

// maxStreamOutDepth bounds how deep StreamOut walks a tree (one handle per level).
const maxStreamOutDepth = 1024

// openFS opens the filesystem of guid's container (see containerFS).
func (r *Runtime) openFS(ctx context.Context, guid string) (*containerFS, error) {
	ctx = r.nsCtx(ctx)
	_, task, err := r.loadTask(ctx, guid)
	if err != nil {
		return nil, err
	}
	return openContainerFS(ctx, guid, task)
}

// StreamIn extracts a tar stream into dir inside the container, host-side through a
// handle on the container's root (see containerFS), owned by user. Entries must pass
// archivepolicy.Check.
func (r *Runtime) StreamIn(ctx context.Context, guid, dir, user string, tarStream io.Reader) error {
	cfs, err := r.openFS(ctx, guid)
	if err != nil {
		return err
	}
	defer cfs.Close()
	u, err := resolveUserIn(cfs, user)
	if err != nil {
		return err
	}
	ids, err := r.idMapOf(guid)
	if err != nil {
		return err
	}
	return extractTar(cfs, dir, int(ids.hostUID(u.UID)), int(ids.hostGID(u.GID)), tarStream)
}

// idMapOf is the id mapping of guid's container (nil: host ids).
func (r *Runtime) idMapOf(guid string) (*idMap, error) {
	meta, _, err := r.state.readContainerMeta(guid)
	if err != nil {
		return nil, fmt.Errorf("container meta of %s: %w", guid, err)
	}
	return meta.UserNS, nil
}

// extractTar extracts the entries of stream under dir (a container path).
func extractTar(cfs *containerFS, dir string, uid, gid int, stream io.Reader) error {
	dest := path.Clean("/" + dir)
	base, err := cfs.mkdirAll(dest, uid, gid)
	if err != nil {
		return fmt.Errorf("stream in %s: %w", dest, err)
	}
	base.Close()
	tr := tar.NewReader(stream)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stream in %s: read tar: %w", dest, err)
		}
		entry, err := archivepolicy.Check(dest, hdr)
		if err != nil {
			return fmt.Errorf("stream in %s: %w", dest, err)
		}
		if entry.Name == "" {
			continue
		}
		if err := extractEntry(cfs, dest, entry, hdr, tr, uid, gid); err != nil {
			return fmt.Errorf("stream in %s: %w", dest, err)
		}
	}
}

// extractEntry creates one entry: its parent is resolved in the container's root, the
// entry itself is made by name in that parent and set up through its own handle.
func extractEntry(cfs *containerFS, dest string, entry archivepolicy.Entry, hdr *tar.Header, rd io.Reader, uid, gid int) error {
	target := path.Join(dest, entry.Name)
	parent, err := cfs.mkdirAll(path.Dir(target), uid, gid)
	if err != nil {
		return err
	}
	defer parent.Close()
	name := path.Base(target)
	mode := uint32(fs.FileMode(hdr.Mode).Perm()) | uint32(hdr.Mode)&(unix.S_ISUID|unix.S_ISGID|unix.S_ISVTX)
	var opErr error
	switch hdr.Typeflag {
	case tar.TypeDir:
		opErr = extractDir(parent, name, mode, uid, gid)
	case tar.TypeReg: // tar.Reader reports the legacy TypeRegA as TypeReg
		opErr = extractFile(parent, name, mode, rd, uid, gid)
	case tar.TypeSymlink:
		opErr = extractSymlink(parent, name, hdr.Linkname, uid, gid)
	case tar.TypeLink:
		opErr = extractHardLink(cfs, parent, name, path.Join(dest, entry.HardLink))
	default:
		return nil // devices, FIFOs and the like are skipped
	}
	var errno syscall.Errno
	var pe *fs.PathError
	switch {
	case opErr == nil:
		return nil
	case errors.As(opErr, &errno), errors.As(opErr, &pe):
		return pathErr("extract", target, opErr)
	}
	return fmt.Errorf("extract %s: %w", target, opErr) // reading the stream, naming no path
}

// extractDir makes directory name in parent, or keeps an existing one, and sets its
// owner and mode. An existing symlink is kept as it is (later entries go through it)
// but never followed to change its target's owner or mode.
func extractDir(parent *os.File, name string, mode uint32, uid, gid int) error {
	if err := unix.Mkdirat(int(parent.Fd()), name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	d, err := openAt(parent, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if (errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)) && isSymlinkAt(parent, name) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Chown(uid, gid); err != nil {
		return err
	}
	return unix.Fchmod(int(d.Fd()), mode)
}

// isSymlinkAt reports whether name in dir is a symlink.
func isSymlinkAt(dir *os.File, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// extractFile replaces name in parent by a new regular file with rd's content; the file
// is created exclusively, so it is never an inode that was there before.
func extractFile(parent *os.File, name string, mode uint32, rd io.Reader, uid, gid int) error {
	f, err := createNew(parent, name, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rd); err != nil {
		f.Close()
		return err
	}
	if err := f.Chown(uid, gid); err != nil {
		f.Close()
		return err
	}
	// After the chown, which clears setuid and setgid bits.
	if err := unix.Fchmod(int(f.Fd()), mode); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// createNew removes name in dir unless it is a directory and creates it anew.
func createNew(dir *os.File, name string, mode uint32) (*os.File, error) {
	for range 3 {
		removeIfNotDir(dir, name)
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, unix.EEXIST
}

// extractSymlink replaces name in parent by a symlink to target owned by uid:gid.
func extractSymlink(parent *os.File, name, target string, uid, gid int) error {
	removeIfNotDir(parent, name)
	if err := unix.Symlinkat(target, int(parent.Fd()), name); err != nil {
		return err
	}
	link, err := openAt(parent, name, unix.O_PATH)
	if err != nil {
		return err
	}
	defer link.Close()
	info, err := link.Stat()
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		return errors.New("replaced while being extracted")
	}
	return unix.Fchownat(int(link.Fd()), "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
}

// extractHardLink replaces name in parent by a hard link to source (a container path,
// its parent resolved in the container's root, itself not followed).
func extractHardLink(cfs *containerFS, parent *os.File, name, source string) error {
	srcDir, err := cfs.lookupDir(path.Dir(source))
	if err != nil {
		return err
	}
	defer srcDir.Close()
	removeIfNotDir(parent, name)
	return unix.Linkat(int(srcDir.Fd()), path.Base(source), int(parent.Fd()), name, 0)
}

// removeIfNotDir removes name in dir unless it is a directory (failures are left to
// the creation that follows).
func removeIfNotDir(dir *os.File, name string) {
	_ = unix.Unlinkat(int(dir.Fd()), name, 0)
}

// StreamOut returns a tar of path inside the container: one entry named after a file,
// or the directory's tree under its base name. The path is resolved in the container's
// root; the tree is walked through handles and its symlinks are archived, not followed.
func (r *Runtime) StreamOut(ctx context.Context, guid, p string) (io.ReadCloser, error) {
	ids, err := r.idMapOf(guid)
	if err != nil {
		return nil, err
	}
	cfs, err := r.openFS(ctx, guid)
	if err != nil {
		return nil, err
	}
	src := path.Clean("/" + p)
	h, err := cfs.lookup(src)
	if err != nil {
		cfs.Close()
		return nil, fmt.Errorf("stream out %s: %w", src, err)
	}
	info, err := h.Stat()
	if err != nil {
		h.Close()
		cfs.Close()
		return nil, fmt.Errorf("stream out %s: %w", src, pathErr("stat", src, err))
	}
	name := path.Base(src)
	if name == "/" {
		name = "."
	}
	pr, pw := io.Pipe()
	go func() {
		defer cfs.Close()
		defer h.Close()
		tw := tar.NewWriter(pw)
		err := writeTree(tw, ids, h, info, src, name, 0)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// writeTree writes the entry of handle h (an O_PATH handle, at container path p) as
// name and, for a directory, its tree, with owners translated by ids.
func writeTree(tw *tar.Writer, ids *idMap, h *os.File, info fs.FileInfo, p, name string, depth int) error {
	if err := writeEntry(tw, ids, h, info, p, name); err != nil {
		return err
	}
	if !info.IsDir() {
		return nil
	}
	if depth >= maxStreamOutDepth {
		return fmt.Errorf("%s: deeper than %d directories", p, maxStreamOutDepth)
	}
	names, err := readDirNames(h)
	if err != nil {
		return pathErr("read directory", p, err)
	}
	for _, child := range names {
		ch, err := openAt(h, child, unix.O_PATH)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		childPath := path.Join(p, child)
		if err != nil {
			return pathErr("open", childPath, err)
		}
		childInfo, err := ch.Stat()
		if err == nil {
			err = writeTree(tw, ids, ch, childInfo, childPath, path.Join(name, child), depth+1)
		} else {
			err = pathErr("stat", childPath, err)
		}
		ch.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// readDirNames lists directory handle h, sorted.
func readDirNames(h *os.File) ([]string, error) {
	d, err := reopen(h, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// writeEntry writes the header of h and, for a regular file, its content (as many
// bytes as its size said, however it changes meanwhile).
func writeEntry(tw *tar.Writer, ids *idMap, h *os.File, info fs.FileInfo, p, name string) error {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = readlinkAt(h, ""); err != nil {
			return pathErr("readlink", p, err)
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return nil // sockets and the like are skipped
	}
	hdr.Name = name
	if ids != nil {
		// Owners as the container sees them (its ids; the host's names do not apply).
		hdr.Uid, hdr.Gid = int(ids.containerUID(uint32(hdr.Uid))), int(ids.containerGID(uint32(hdr.Gid)))
		hdr.Uname, hdr.Gname = "", ""
	}
	if info.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := reopen(h, unix.O_RDONLY)
	if err != nil {
		return pathErr("open", p, err)
	}
	defer f.Close()
	if _, err := io.CopyN(tw, f, hdr.Size); errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: the file shrank while it was read", p)
	} else if errno := syscall.Errno(0); errors.As(err, &errno) {
		return pathErr("read", p, errno)
	} else if err != nil {
		return err // the tar stream's, naming no path
	}
	return nil
}
