package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/snapshots"
)

// PurgeNamespace removes everything a cell's namespace holds in the containerd at socket,
// for a cell that goes away for good: every container (its task killed first, its
// snapshot with it), image and lease, the snapshots left in the default snapshotter and
// the content, then the namespace itself. An unknown namespace is no error; it carries
// on past a failure and returns them all.
func PurgeNamespace(ctx context.Context, socket, namespace string) error {
	client, err := containerd.New(socket, containerd.WithTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("connect to containerd at %s: %w", socket, err)
	}
	defer client.Close()
	known, err := client.NamespaceService().List(ctx)
	if err != nil {
		return fmt.Errorf("list containerd namespaces: %w", err)
	}
	if !slices.Contains(known, namespace) {
		return nil
	}
	ctx = namespaces.WithNamespace(ctx, namespace)
	errs := []error{
		removeContainers(ctx, client),
		removeImages(ctx, client),
		removeLeases(ctx, client),
	}
	leftover, err := removeSnapshots(ctx, client.SnapshotService(DefaultSnapshotter))
	errs = append(errs, err, removeContent(ctx, client.ContentStore()))
	err = client.NamespaceService().Delete(ctx, namespace)
	switch {
	case err == nil, errdefs.IsNotFound(err):
	case leftover && errdefs.IsFailedPrecondition(err):
		// Not empty: the snapshots containerd would not remove (logged above).
		slog.Default().Warn("purge-kept-namespace", "namespace", namespace, "error", err.Error())
	default:
		errs = append(errs, fmt.Errorf("delete namespace: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("purge containerd namespace %s: %w", namespace, err)
	}
	return nil
}

// removeContainers kills and deletes each container's task, then the container and its
// snapshot.
func removeContainers(ctx context.Context, client *containerd.Client) error {
	ctrs, err := client.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, c := range ctrs {
		task, err := c.Task(ctx, nil)
		switch {
		case errdefs.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("load task %s: %w", c.ID(), err))
		default:
			if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete task %s: %w", c.ID(), err))
			}
		}
		if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete container %s: %w", c.ID(), err))
		}
	}
	return errors.Join(errs...)
}

func removeImages(ctx context.Context, client *containerd.Client) error {
	imgs, err := client.ImageService().List(ctx)
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	var errs []error
	for _, img := range imgs {
		if err := client.ImageService().Delete(ctx, img.Name, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete image %s: %w", img.Name, err))
		}
	}
	return errors.Join(errs...)
}

func removeLeases(ctx context.Context, client *containerd.Client) error {
	ls, err := client.LeasesService().List(ctx)
	if err != nil {
		return fmt.Errorf("list leases: %w", err)
	}
	var errs []error
	for _, l := range ls {
		if err := client.LeasesService().Delete(ctx, l, leases.SynchronousDelete); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete lease %s: %w", l.ID, err))
		}
	}
	return errors.Join(errs...)
}

// removeSnapshots removes every snapshot, again while that makes progress (a parent goes
// only after its children). containerd sometimes refuses to remove a snapshot "with
// child" for a moment after its children went (remapped rootfses, remap.go, showed it):
// those are tried a few more rounds, and a snapshot still refused for that reason is
// logged and left (leftover is true), not an error.
func removeSnapshots(ctx context.Context, sn snapshots.Snapshotter) (leftover bool, _ error) {
	stuckRounds := 0
	for {
		var keys []string
		err := sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			keys = append(keys, info.Name)
			return nil
		})
		if err != nil {
			return false, fmt.Errorf("list snapshots: %w", err)
		}
		if len(keys) == 0 {
			return false, nil
		}
		var errs []error
		refused := 0
		for _, k := range keys {
			err := sn.Remove(ctx, k)
			if err == nil || errdefs.IsNotFound(err) {
				continue
			}
			if errdefs.IsFailedPrecondition(err) {
				refused++
			}
			errs = append(errs, fmt.Errorf("remove snapshot %s: %w", k, err))
		}
		if len(errs) < len(keys) {
			stuckRounds = 0
			continue
		}
		if refused < len(errs) {
			return false, errors.Join(errs...)
		}
		if stuckRounds++; stuckRounds > purgeSnapshotRetries {
			slog.Default().Warn("purge-left-snapshots", "count", len(keys), "error", errors.Join(errs...).Error())
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(purgeSnapshotRetryWait):
		}
	}
}

// How often and how long apart removeSnapshots tries again snapshots refused "with child".
const (
	purgeSnapshotRetries   = 5
	purgeSnapshotRetryWait = 200 * time.Millisecond
)

func removeContent(ctx context.Context, store content.Store) error {
	var errs []error
	err := store.Walk(ctx, func(info content.Info) error {
		if err := store.Delete(ctx, info.Digest); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete content %s: %w", info.Digest, err))
		}
		return nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("list content: %w", err))
	}
	return errors.Join(errs...)
}
