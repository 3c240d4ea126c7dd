package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/devstack"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// TestBuildpackManagement is issue 15's acceptance 6: creating, moving, replacing and
// deleting buildpacks persists across a restart of every component; an archive without
// bin/detect is refused; a buildpack whose blob changed fails its staging on the
// checksum.
func TestBuildpackManagement(t *testing.T) {
	ps := newPushStack(t, 1)
	stager, conn, err := ps.Stager.Dial()
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	archive, err := devstack.TarGzDir(filepath.Join(ps.Root, "buildpacks", "busybox"))
	require.NoError(t, err)
	order := func() []string {
		t.Helper()
		resp, err := stager.ListBuildpacks(callCtx(t), &stagerv1.ListBuildpacksRequest{Stack: "busybox"})
		require.NoError(t, err)
		var names []string
		for i, bp := range resp.GetBuildpacks() {
			require.EqualValues(t, i+1, bp.GetPosition())
			names = append(names, bp.GetName())
		}
		return names
	}
	restartAll := func() {
		t.Helper()
		ctx := ctxFor(t, runningWait)
		for _, b := range ps.BBS {
			require.NoError(t, b.Restart(ctx))
		}
		require.NoError(t, ps.Auctioneer.Restart(ctx))
		for _, r := range ps.Reps {
			require.NoError(t, r.Restart(ctx))
		}
		require.NoError(t, ps.RouteEmitter.Restart(ctx))
		require.NoError(t, ps.Fileserver.Stop(ctx))
		require.NoError(t, ps.Fileserver.Start(ctx))
		require.NoError(t, ps.Stager.Restart(ctx))
	}
	require.Equal(t, []string{"busybox"}, order())

	_, err = stager.CreateBuildpack(callCtx(t), &stagerv1.CreateBuildpackRequest{Name: "extra", Stack: "busybox", Position: 1, Archive: archive, Filename: "extra.tgz"})
	require.NoError(t, err)
	_, err = stager.CreateBuildpack(callCtx(t), &stagerv1.CreateBuildpackRequest{Name: "third", Stack: "busybox", Archive: archive, Filename: "third.tgz"})
	require.NoError(t, err)
	require.Equal(t, []string{"extra", "busybox", "third"}, order())
	_, err = stager.UpdateBuildpack(callCtx(t), &stagerv1.UpdateBuildpackRequest{Name: "extra", Stack: "busybox", Position: 3})
	require.NoError(t, err)
	require.Equal(t, []string{"busybox", "third", "extra"}, order())
	restartAll()
	require.Equal(t, []string{"busybox", "third", "extra"}, order(), "the order survived a restart of every component")

	_, err = stager.DeleteBuildpack(callCtx(t), &stagerv1.DeleteBuildpackRequest{Name: "third", Stack: "busybox"})
	require.NoError(t, err)
	restartAll()
	require.Equal(t, []string{"busybox", "extra"}, order(), "the deletion survived a restart")

	noDetect := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(noDetect, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(noDetect, "bin", "compile"), []byte("#!/bin/sh\n"), 0o755))
	bad, err := devstack.TarGzDir(noDetect)
	require.NoError(t, err)
	_, err = stager.CreateBuildpack(callCtx(t), &stagerv1.CreateBuildpackRequest{Name: "nodetect", Stack: "busybox", Archive: bad, Filename: "nodetect.tgz"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.ErrorContains(t, err, "buildpack archive has no bin/detect")
	require.Equal(t, []string{"busybox", "extra"}, order(), "a refused archive changes nothing")

	resp, err := stager.CreateBuildpack(callCtx(t), &stagerv1.CreateBuildpackRequest{Name: "tampered", Stack: "busybox", Position: 1, Archive: archive, Filename: "tampered.tgz"})
	require.NoError(t, err)
	blob := filepath.Join(ps.Fileserver.Config.BlobDirectory, "blobs", filepath.FromSlash(resp.GetBuildpack().GetBlobKey()))
	other, err := devstack.TarGzDir(filepath.Join(ps.Root, "buildpacks", "binary"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(blob, other, 0o644))
	res := ps.push(t, ps.example("static-site"), "tampered", "--stack", "busybox", "-b", "tampered")
	require.Error(t, res.err)
	require.Contains(t, res.output(), "checksum mismatch")
	require.Empty(t, ps.appLRPs(t, "tampered"))
	require.Empty(t, ps.tasks(t))
}
