package devstack

import (
	"os"
	"path/filepath"
	"testing"

	"drover.dev/lib/testenv"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestMountsUnderListsDeepestFirstAndUnmounts(t *testing.T) {
	testenv.RequireRoot(t, "it mounts tmpfs")
	dir := t.TempDir()
	cell, nested, sibling := filepath.Join(dir, "cell 1"), filepath.Join(dir, "cell 1", "state"), filepath.Join(dir, "cell 10")
	for _, mp := range []string{cell, nested, sibling} {
		require.NoError(t, os.MkdirAll(mp, 0o755))
		require.NoError(t, unix.Mount("tmpfs", mp, "tmpfs", 0, "size=64k"))
		if mp == cell {
			require.NoError(t, os.MkdirAll(nested, 0o755))
		}
	}
	t.Cleanup(func() { _ = unmountUnder(dir) })

	got, err := mountsUnder(cell + "/")
	require.NoError(t, err)
	require.Equal(t, []string{nested, cell}, got, "a path with a space, its nested mount first, not its sibling")

	require.NoError(t, unmountUnder(cell))
	got, err = mountsUnder(dir)
	require.NoError(t, err)
	require.Equal(t, []string{sibling}, got)
}
