package containerd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The disk quota: when the snapshotter's root is on btrfs with quotas enabled
// (scripts/containerd.sh sets that up on a loop-mounted image), the container's
// snapshot directory (the overlay upper and work dirs) becomes a btrfs subvolume whose
// qgroup is limited to disk_mb, so a write beyond it fails with EDQUOT inside the
// container and the process lives on. On any other filesystem the runtime falls back to
// measuring the upper dir and stopping the container's processes (disk.go).

// btrfs ioctls (linux/btrfs.h): the request numbers are _IOW/_IOR(0x94, nr, size).
const (
	btrfsIocSubvolCreate = 0x5000940e // _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
	btrfsIocQgroupLimit  = 0x8030942b // _IOR(0x94, 43, struct btrfs_ioctl_qgroup_limit_args)
	btrfsPathNameMax     = 4087
	btrfsQgroupMaxRfer   = 1 << 0
	btrfsQgroupMaxExcl   = 1 << 1
)

// btrfsVolArgs is struct btrfs_ioctl_vol_args.
type btrfsVolArgs struct {
	Fd   int64
	Name [btrfsPathNameMax + 1]byte
}

// btrfsQgroupLimitArgs is struct btrfs_ioctl_qgroup_limit_args.
type btrfsQgroupLimitArgs struct {
	QgroupID uint64
	Flags    uint64
	MaxRfer  uint64
	MaxExcl  uint64
	RsvRfer  uint64
	RsvExcl  uint64
}

// errNoQuota says the filesystem cannot enforce a quota (not btrfs, or quotas off).
var errNoQuota = errors.New("the snapshot filesystem has no quota support")

// limitSnapshotDisk turns the snapshot directory holding upper (SNAPSHOT/fs, beside
// SNAPSHOT/work) into a btrfs subvolume limited to limitMB. It must run before the
// snapshot is mounted, while both dirs are empty. errNoQuota (wrapped) means the
// caller falls back to polling; the snapshot is then left as it was.
func limitSnapshotDisk(upper string, limitMB int) error {
	if limitMB <= 0 || upper == "" {
		return nil
	}
	snap := filepath.Dir(upper)
	work := filepath.Join(snap, "work")
	if filepath.Base(upper) != "fs" {
		return fmt.Errorf("%w: upper dir %s is not a snapshot's fs dir", errNoQuota, upper)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(snap, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", snap, err)
	}
	if st.Type != unix.BTRFS_SUPER_MAGIC {
		return fmt.Errorf("%w: %s is not on btrfs", errNoQuota, snap)
	}
	dirs := []string{snap, upper, work}
	infos := make([]os.FileInfo, len(dirs))
	for i, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("snapshot dir: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("snapshot dir %s is not a directory", d)
		}
		infos[i] = fi
	}
	for _, d := range dirs[1:] {
		entries, err := os.ReadDir(d)
		if err != nil {
			return fmt.Errorf("snapshot dir: %w", err)
		}
		if len(entries) > 0 {
			return fmt.Errorf("snapshot dir %s is not empty", d)
		}
	}

	// Build the subvolume beside the snapshot, then swap it in.
	tmp := snap + ".quota"
	old := snap + ".plain"
	_ = removeSubvolume(tmp)
	if err := createSubvolume(tmp); err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			_ = removeSubvolume(tmp)
		}
	}()
	if err := setQgroupLimit(tmp, uint64(limitMB)<<20); err != nil {
		return err
	}
	for i, d := range []string{tmp, filepath.Join(tmp, "fs"), filepath.Join(tmp, "work")} {
		if i > 0 {
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
		}
		if err := copyOwnerAndMode(d, infos[i]); err != nil {
			return err
		}
	}
	if err := os.Rename(snap, old); err != nil {
		return fmt.Errorf("swap in the quota subvolume: %w", err)
	}
	if err := os.Rename(tmp, snap); err != nil {
		_ = os.Rename(old, snap)
		return fmt.Errorf("swap in the quota subvolume: %w", err)
	}
	ok = true
	return os.RemoveAll(old)
}

// copyOwnerAndMode gives path the owner and permissions of fi.
func copyOwnerAndMode(path string, fi os.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if err := os.Lchown(path, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	return os.Chmod(path, fi.Mode().Perm())
}

// createSubvolume makes path a new, empty btrfs subvolume.
func createSubvolume(path string) error {
	parent, name := filepath.Dir(path), filepath.Base(path)
	if len(name) > btrfsPathNameMax {
		return fmt.Errorf("subvolume name too long: %s", name)
	}
	fd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", parent, err)
	}
	defer unix.Close(fd)
	var args btrfsVolArgs
	copy(args.Name[:], name)
	if err := ioctl(fd, btrfsIocSubvolCreate, unsafe.Pointer(&args)); err != nil {
		return fmt.Errorf("create btrfs subvolume %s: %w", path, err)
	}
	return nil
}

// setQgroupLimit limits the qgroup of the subvolume at path to limit bytes. It fails
// (errNoQuota) when quotas are not enabled on the filesystem.
func setQgroupLimit(path string, limit uint64) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	// qgroup id 0: the subvolume the fd is in.
	args := btrfsQgroupLimitArgs{Flags: btrfsQgroupMaxRfer | btrfsQgroupMaxExcl, MaxRfer: limit, MaxExcl: limit}
	if err := ioctl(fd, btrfsIocQgroupLimit, unsafe.Pointer(&args)); err != nil {
		if errors.Is(err, unix.ENOTCONN) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%w: quotas are not enabled on the btrfs holding %s (%v)", errNoQuota, path, err)
		}
		return fmt.Errorf("limit the qgroup of %s: %w", path, err)
	}
	return nil
}

// removeSubvolume removes a subvolume (or plain dir) and everything in it; the kernel
// deletes an empty subvolume on rmdir and drops its qgroup once it is cleaned.
func removeSubvolume(path string) error { return os.RemoveAll(path) }

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// limitDisk enforces limitMB on the container's snapshot with the filesystem when it
// can. false (and no error) means it cannot here, and the disk poll enforces the limit.
func (r *Runtime) limitDisk(guid, upper string, limitMB int) (bool, error) {
	if r.diskByPolling {
		return false, nil
	}
	err := limitSnapshotDisk(upper, limitMB)
	switch {
	case err == nil:
		return limitMB > 0, nil
	case errors.Is(err, errNoQuota):
		r.logger.Debug("disk-quota-by-polling", "guid", guid, "reason", err.Error())
		return false, nil
	default:
		return false, fmt.Errorf("disk quota of %s: %w", guid, err)
	}
}
