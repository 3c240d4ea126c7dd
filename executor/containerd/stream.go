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
	"path/filepath"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// containerRoot is the host path of the container's root (through its init).
func (r *Runtime) containerRoot(ctx context.Context, guid string) (string, uint32, error) {
	_, task, err := r.loadTask(r.nsCtx(ctx), guid)
	if err != nil {
		return "", 0, err
	}
	return fmt.Sprintf("/proc/%d/root", task.Pid()), task.Pid(), nil
}

// StreamIn extracts a tar stream into dir inside the container, host-side through the
// init's root (every path resolved inside it), owned by user.
func (r *Runtime) StreamIn(ctx context.Context, guid, dir, user string, tarStream io.Reader) error {
	root, pid, err := r.containerRoot(ctx, guid)
	if err != nil {
		return err
	}
	u, err := r.resolveUser(pid, user)
	if err != nil {
		return err
	}
	return extractTar(root, dir, int(u.UID), int(u.GID), tarStream)
}

// extractTar extracts entries under root/dir, never following a link out of root.
func extractTar(root, dir string, uid, gid int, stream io.Reader) error {
	base, err := securejoin.SecureJoin(root, dir)
	if err != nil {
		return fmt.Errorf("stream in %s: %w", dir, err)
	}
	if err := mkdirOwned(root, base, uid, gid); err != nil {
		return fmt.Errorf("stream in %s: %w", dir, err)
	}
	tr := tar.NewReader(stream)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stream in %s: read tar: %w", dir, err)
		}
		name := path.Clean("/" + hdr.Name)
		if name == "/" && hdr.Typeflag == tar.TypeDir {
			continue
		}
		target, err := securejoin.SecureJoin(root, path.Join(dir, name))
		if err != nil {
			return fmt.Errorf("stream in %s: %w", hdr.Name, err)
		}
		if err := mkdirOwned(root, filepath.Dir(target), uid, gid); err != nil {
			return fmt.Errorf("stream in %s: %w", hdr.Name, err)
		}
		if err := extractEntry(root, dir, target, hdr, tr, uid, gid); err != nil {
			return fmt.Errorf("stream in %s: %w", hdr.Name, err)
		}
	}
}

func extractEntry(root, dir, target string, hdr *tar.Header, rd io.Reader, uid, gid int) error {
	mode := fs.FileMode(hdr.Mode).Perm() | fs.FileMode(hdr.Mode)&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := os.Lchown(target, uid, gid); err != nil {
			return err
		}
		return os.Chmod(target, mode)
	case tar.TypeReg, tar.TypeRegA:
		_ = removeIfNotDir(target)
		f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|noFollow, mode)
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
		if err := f.Chmod(mode); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case tar.TypeSymlink:
		_ = removeIfNotDir(target)
		if err := os.Symlink(hdr.Linkname, target); err != nil {
			return err
		}
		return os.Lchown(target, uid, gid)
	case tar.TypeLink:
		src, err := securejoin.SecureJoin(root, path.Join(dir, path.Clean("/"+hdr.Linkname)))
		if err != nil {
			return err
		}
		_ = removeIfNotDir(target)
		return os.Link(src, target)
	default:
		return nil
	}
}

func removeIfNotDir(p string) error {
	info, err := os.Lstat(p)
	if err != nil || info.IsDir() {
		return err
	}
	return os.Remove(p)
}

// mkdirOwned creates dir (a resolved path under root) and missing parents, owning the
// ones it creates to uid:gid.
func mkdirOwned(root, dir string, uid, gid int) error {
	if dir == root || len(dir) < len(root) {
		return nil
	}
	if info, err := os.Stat(dir); err == nil {
		if !info.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := mkdirOwned(root, filepath.Dir(dir), uid, gid); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Lchown(dir, uid, gid)
}

// StreamOut returns a tar of path inside the container: one entry named after a file,
// or the directory's tree under its base name.
func (r *Runtime) StreamOut(ctx context.Context, guid, p string) (io.ReadCloser, error) {
	root, _, err := r.containerRoot(ctx, guid)
	if err != nil {
		return nil, err
	}
	src, err := securejoin.SecureJoin(root, p)
	if err != nil {
		return nil, fmt.Errorf("stream out %s: %w", p, err)
	}
	info, err := os.Lstat(src)
	if err != nil {
		return nil, fmt.Errorf("stream out %s: %w", p, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeTar(pw, src, path.Base(path.Clean("/"+p)), info))
	}()
	return pr, nil
}

// writeTar writes src (a file or a tree) as entries named under name.
func writeTar(w io.Writer, src, name string, info fs.FileInfo) error {
	tw := tar.NewWriter(w)
	if name == "/" {
		name = "."
	}
	if !info.IsDir() {
		if err := writeTarEntry(tw, src, name, info); err != nil {
			return err
		}
		return tw.Close()
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return writeTarEntry(tw, p, path.Join(name, filepath.ToSlash(rel)), fi)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func writeTarEntry(tw *tar.Writer, src, name string, info fs.FileInfo) error {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(src); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return nil // sockets and the like are skipped
	}
	hdr.Name = name
	if info.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
