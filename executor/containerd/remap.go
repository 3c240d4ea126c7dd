package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/mount"
	"github.com/containerd/containerd/snapshots"
	"github.com/opencontainers/image-spec/identity"
)

// Remapped snapshots: runc 1.1 has no idmapped mounts, so the rootfs of a container in
// a user namespace is an overlay on a copy of the image's top layer whose files are
// owned by the mapped host ids. The copy is made once per image and mapping, committed
// under a stable name with a GC root label (containerd keeps it, and the image's layers
// under it), and shared by every container of that image and mapping. The image GC
// (imagegc.go) removes the copies of an image it collects.

// Labels of remapped snapshots.
const (
	// remapOfLabel is on each remapped snapshot; the value is the image chain id.
	remapOfLabel = "drover.dev/remap-of"
	// gcRootLabel makes containerd's GC keep a snapshot with nothing referencing it.
	gcRootLabel = "containerd.io/gc.root"
)

// remapKey is the name of the remapped snapshot of an image (its chain id) under m.
func remapKey(chainID string, m idMap) string {
	return fmt.Sprintf("remap-%s-%d-%d-%d", chainID, m.HostUID, m.HostGID, m.Size)
}

// remappedSnapshot returns the name of the committed remapped snapshot of img under m,
// making it first when there is none. Callers for one key share one making.
func (r *Runtime) remappedSnapshot(ctx context.Context, img containerd.Image, m idMap) (string, error) {
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return "", fmt.Errorf("image layers of %s: %w", img.Name(), err)
	}
	chainID := identity.ChainID(diffIDs).String()
	key := remapKey(chainID, m)
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	if _, err := sn.Stat(ctx, key); err == nil {
		return key, nil
	}
	_, err, _ = r.remaps.Do(key, func() (any, error) {
		if _, err := sn.Stat(ctx, key); err == nil {
			return nil, nil
		}
		start := time.Now()
		if err := r.makeRemapped(ctx, sn, chainID, key, m); err != nil {
			return nil, err
		}
		r.logger.Info("remapped-snapshot-made", "image", img.Name(), "snapshot", key, "duration", time.Since(start).String())
		return nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("remapped rootfs of %s: %w", img.Name(), err)
	}
	return key, nil
}

// makeRemapped prepares a snapshot on parent, owns every file in it to the mapped ids
// and commits it as key.
func (r *Runtime) makeRemapped(ctx context.Context, sn snapshots.Snapshotter, parent, key string, m idMap) (retErr error) {
	now := time.Now().UTC().Format(time.RFC3339)
	tmp := key + "-prepare-" + randomID()
	mounts, err := sn.Prepare(ctx, tmp, parent, snapshots.WithLabels(map[string]string{gcRootLabel: now}))
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		cctx, cancel := r.cleanupCtx(ctx)
		defer cancel()
		if err := sn.Remove(cctx, tmp); err != nil && !errdefs.IsNotFound(err) {
			r.logger.Warn("remove-remap-prepare-snapshot-failed", "snapshot", tmp, "error", err)
		}
	}()
	dir, err := os.MkdirTemp(r.cfg.StateDir, "remap-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := mount.All(mounts, dir); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	chownErr := chownTree(dir, m)
	if err := mount.UnmountAll(dir, 0); err != nil {
		return errors.Join(chownErr, fmt.Errorf("unmount: %w", err))
	}
	if chownErr != nil {
		return chownErr
	}
	labels := map[string]string{gcRootLabel: now, remapOfLabel: parent}
	err = sn.Commit(ctx, key, tmp, snapshots.WithLabels(labels))
	if errdefs.IsAlreadyExists(err) {
		return nil // made meanwhile by another runtime on the namespace
	}
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	return nil
}

// chownTree owns every file under root (itself included, symlinks not followed) by the
// mapped ids of its owner, keeping setuid and setgid bits (a chown clears them). The
// ids are all read first, then all set: a hard link's inode is then set once to its
// original ids' mapping, never mapped twice.
func chownTree(root string, m idMap) error {
	type entry struct {
		path     string
		uid, gid uint32
		mode     fs.FileMode
	}
	var entries []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner", p)
		}
		entries = append(entries, entry{p, st.Uid, st.Gid, info.Mode()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("walk the rootfs: %w", err)
	}
	for _, e := range entries {
		if err := os.Lchown(e.path, int(m.hostUID(e.uid)), int(m.hostGID(e.gid))); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
		if e.mode&fs.ModeSymlink == 0 && e.mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			if err := os.Chmod(e.path, e.mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
				return fmt.Errorf("chmod: %w", err)
			}
		}
	}
	return nil
}

// withSnapshotOn gives the container a new active snapshot id on the committed
// snapshot parent (as containerd.WithNewSnapshot does on an image's top layer).
func withSnapshotOn(id, parent string) containerd.NewContainerOpts {
	return func(ctx context.Context, client *containerd.Client, c *containers.Container) error {
		if _, err := client.SnapshotService(c.Snapshotter).Prepare(ctx, id, parent); err != nil {
			return err
		}
		c.SnapshotKey = id
		return nil
	}
}

// removeRemappedSnapshots removes the remapped snapshots of the image chain chainID
// ("" for all) that no container uses any more; one still in use (or with a child
// containerd has not let go of yet) is left and logged.
func (r *Runtime) removeRemappedSnapshots(ctx context.Context, chainID string) error {
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	filter := fmt.Sprintf("labels.%q", remapOfLabel)
	if chainID != "" {
		filter = fmt.Sprintf("labels.%q==%q", remapOfLabel, chainID)
	}
	var keys []string
	if err := sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		keys = append(keys, info.Name)
		return nil
	}, filter); err != nil {
		return fmt.Errorf("list remapped snapshots: %w", err)
	}
	for _, k := range keys {
		err := sn.Remove(ctx, k)
		switch {
		case err == nil:
			r.logger.Info("remapped-snapshot-removed", "snapshot", k)
		case errdefs.IsNotFound(err):
		case errdefs.IsFailedPrecondition(err):
			r.logger.Info("remapped-snapshot-kept", "snapshot", k, "reason", err.Error())
		default:
			return fmt.Errorf("remove remapped snapshot %s: %w", k, err)
		}
	}
	return nil
}
