package containerd

import (
	"context"
	"testing"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/oci"
	"github.com/stretchr/testify/require"
)

// TestForeignContainerInNamespaceIsListedAndDestroyed: a container made by hand in the
// runtime's namespace (no owner label, no state) is listed, so that the engine reaps it
// as unknown, and Destroy removes it with its task and snapshot.
func TestForeignContainerInNamespaceIsListedAndDestroyed(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	ctx := r.nsCtx(context.Background())

	img, err := r.preloadedImage(ctx, "busybox")
	require.NoError(t, err)
	id := "foreign-" + randHex(t, 4)
	ctr, err := r.client.NewContainer(ctx, id,
		containerd.WithNewSnapshot(id+"-snapshot", img),
		containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("/bin/sleep", "1000")))
	require.NoError(t, err)
	t.Cleanup(func() { // only when Destroy failed
		if task, err := ctr.Task(ctx, nil); err == nil {
			_, _ = task.Delete(ctx, containerd.WithProcessKill)
		}
		_ = ctr.Delete(ctx, containerd.WithSnapshotCleanup)
	})
	task, err := ctr.NewTask(ctx, cio.NullIO)
	require.NoError(t, err)
	require.NoError(t, task.Start(ctx))

	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, id, list[0].Guid)
	require.True(t, list[0].Alive)
	require.Empty(t, list[0].Tags)
	require.Empty(t, list[0].State, "a foreign container has no engine state")

	require.NoError(t, r.Destroy(ctx, id))
	_, err = r.client.LoadContainer(ctx, id)
	require.True(t, errdefs.IsNotFound(err), "the foreign container is gone: %v", err)
	list, err = r.List(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
}
