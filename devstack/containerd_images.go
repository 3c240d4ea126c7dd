package devstack

import (
	"context"
	"fmt"
	"sort"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/snapshots"

	executorcontainerd "drover.dev/executor/containerd"
)

// Snapshot is one snapshot of a containerd namespace, for tests and people.
type Snapshot struct {
	Key, Parent string
	// Active is true for a container's writable snapshot, false for a committed
	// (image layer) one.
	Active bool
}

// Snapshots lists the snapshots of namespace ns in the executor's snapshotter, sorted by
// key. An unknown namespace holds none.
func (c Containerd) Snapshots(ctx context.Context, ns string) ([]Snapshot, error) {
	var out []Snapshot
	err := c.with(ctx, ns, func(ctx context.Context, client *containerd.Client) error {
		return client.SnapshotService(executorcontainerd.DefaultSnapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			out = append(out, Snapshot{Key: info.Name, Parent: info.Parent, Active: info.Kind == snapshots.KindActive})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("snapshots of %s: %w", ns, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Content lists the digests of the blobs namespace ns holds in containerd's content
// store (manifests, configs, layers), sorted.
func (c Containerd) Content(ctx context.Context, ns string) ([]string, error) {
	var out []string
	err := c.with(ctx, ns, func(ctx context.Context, client *containerd.Client) error {
		return client.ContentStore().Walk(ctx, func(info content.Info) error {
			out = append(out, info.Digest.String())
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("content of %s: %w", ns, err)
	}
	sort.Strings(out)
	return out, nil
}
