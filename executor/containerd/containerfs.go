package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/containerd/containerd"
	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// containerFS reaches into a container's filesystem from the host through a handle on
// the container's root, opened once. Every path is resolved by the kernel inside that
// root (openat2 RESOLVE_IN_ROOT: ".." and absolute symlinks stay in it, as in a chroot),
// and everything after is done on the handles it returns or on single names relative
// to them, never by reopening a path string: a process of the container that swaps a
// directory for a symlink cannot make the host read or write outside the container.
// Paths in its errors are container paths.
type containerFS struct {
	root *os.File
}

// openContainerFS opens the root of the container whose init is task's. A pid the
// init no longer holds is refused: the init must still run after its /proc entry is
// open (a pid is reused only once its process is reaped), and the root must not be the
// host's own.
func openContainerFS(ctx context.Context, guid string, task containerd.Task) (*containerFS, error) {
	pid := task.Pid()
	proc, err := os.OpenFile(fmt.Sprintf("/proc/%d", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("container %s has no running init: %w", guid, unwrapErrno(err))
	}
	defer proc.Close()
	fd, err := unix.Openat(int(proc.Fd()), "root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("container %s has no running init: %w", guid, err)
	}
	root := os.NewFile(uintptr(fd), "/")
	st, err := task.Status(ctx)
	if err != nil || st.Status != containerd.Running && st.Status != containerd.Paused {
		root.Close()
		return nil, fmt.Errorf("container %s has no running init", guid)
	}
	if sameFile(root, "/") {
		root.Close()
		return nil, fmt.Errorf("container %s: its init's root is the host's", guid)
	}
	return &containerFS{root: root}, nil
}

// sameFile reports whether f is the host file at p.
func sameFile(f *os.File, p string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(p)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// Close releases the root handle.
func (c *containerFS) Close() error { return c.root.Close() }

// lookup returns an O_PATH handle on p (a container path), following symlinks inside
// the container's root.
func (c *containerFS) lookup(p string) (*os.File, error) {
	h, err := pathrs.OpenatInRoot(c.root, p)
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	return h, nil
}

// lookupDir is lookup of a directory.
func (c *containerFS) lookupDir(p string) (*os.File, error) {
	h, err := c.lookup(p)
	if err != nil {
		return nil, err
	}
	if info, err := h.Stat(); err != nil || !info.IsDir() {
		h.Close()
		return nil, pathErr("open", p, syscall.ENOTDIR)
	}
	return h, nil
}

// maxLinks bounds the dangling symlinks mkdirAll follows (the kernel's limit).
const maxLinks = 40

// mkdirAll returns a handle on directory p, creating it and missing parents (mode
// 0755, owned by uid:gid) as needed. A dangling symlink on the way has its target made.
func (c *containerFS) mkdirAll(p string, uid, gid int) (*os.File, error) {
	return c.mkdirAllFollowing(p, uid, gid, 0)
}

func (c *containerFS) mkdirAllFollowing(p string, uid, gid, links int) (*os.File, error) {
	h, err := c.lookupDir(p)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || p == "/" {
		return h, err
	}
	parent, err := c.mkdirAllFollowing(path.Dir(p), uid, gid, links)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	name := path.Base(p)
	err = mkdirOwned(parent, name, 0o755, uid, gid)
	if errors.Is(err, fs.ErrExist) {
		if target, lerr := readlinkAt(parent, name); lerr == nil {
			if links >= maxLinks {
				return nil, pathErr("mkdir", p, syscall.ELOOP)
			}
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(p), target)
			}
			return c.mkdirAllFollowing(path.Clean(target), uid, gid, links+1)
		}
	} else if err != nil {
		return nil, pathErr("mkdir", p, err)
	}
	return c.lookupDir(p)
}

// openReadable opens p (following symlinks in the root) for reading when it is a
// regular file; anything else (a FIFO, a device) is never opened.
func (c *containerFS) openReadable(p string) (*os.File, error) {
	h, err := c.lookup(p)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	info, err := h.Stat()
	if err != nil {
		return nil, pathErr("stat", p, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := reopen(h, unix.O_RDONLY)
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	return f, nil
}

// reopen upgrades an O_PATH handle to an open file of the same inode.
func reopen(h *os.File, flags int) (*os.File, error) {
	return pathrs.Reopen(h, flags|unix.O_CLOEXEC|unix.O_NOCTTY)
}

// mkdirOwned makes directory name in dir and owns it to uid:gid; an existing entry is
// fs.ErrExist.
func mkdirOwned(dir *os.File, name string, mode uint32, uid, gid int) error {
	if err := unix.Mkdirat(int(dir.Fd()), name, mode); err != nil {
		return err
	}
	d, err := openAt(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Chown(uid, gid)
}

// openAt opens name, one component, in dir without following a final symlink.
func openAt(dir *os.File, name string, flags int) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// readlinkAt reads the target of symlink name in dir; name "" reads the symlink dir
// itself is an O_PATH handle on.
func readlinkAt(dir *os.File, name string) (string, error) {
	buf := make([]byte, 4096)
	for {
		n, err := unix.Readlinkat(int(dir.Fd()), name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) >= 1<<20 {
			return "", unix.ENAMETOOLONG
		}
		buf = make([]byte, 2*len(buf))
	}
}

// pathErr reports err of op on container path p with only the errno of the cause, so
// no host path (/proc/<pid>/root/..., /proc/self/fd/...) reaches a message.
func pathErr(op, p string, err error) error {
	return &fs.PathError{Op: op, Path: p, Err: unwrapErrno(err)}
}

// unwrapErrno is err's errno, or a generic error when it has none: errors of path
// resolution may name host paths.
func unwrapErrno(err error) error {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		return errno
	case errors.Is(err, syscall.EXDEV):
		return syscall.EXDEV
	}
	return errors.New("cannot be resolved safely inside the container")
}
