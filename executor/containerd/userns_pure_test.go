package containerd

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"drover.dev/executor"
	"drover.dev/lib/testenv"
	"github.com/stretchr/testify/require"
)

func TestIDMapTranslatesBothWays(t *testing.T) {
	m := newIDMap(executor.UserNamespace{HostUID: 100000, HostGID: 200000, Size: 65536})
	require.Equal(t, uint32(100000), m.hostUID(0))
	require.Equal(t, uint32(102000), m.hostUID(2000))
	require.Equal(t, uint32(202000), m.hostGID(2000))
	require.Equal(t, uint32(100000+overflowID), m.hostUID(70000), "ids beyond the range are nobody")
	require.Equal(t, uint32(2000), m.containerUID(102000))
	require.Equal(t, uint32(2000), m.containerGID(202000))
	require.Equal(t, uint32(overflowID), m.containerUID(0), "host root reads as nobody")
	require.Equal(t, uint32(overflowID), m.containerUID(100000+65536))
	require.Equal(t, uint32(overflowID), m.containerGID(5))

	var none *idMap
	require.Equal(t, uint32(7), none.hostUID(7))
	require.Equal(t, uint32(7), none.containerGID(7))
}

func TestRemapKeyNamesImageAndMapping(t *testing.T) {
	m := idMap{HostUID: 1, HostGID: 2, Size: 65536}
	require.Equal(t, "remap-sha256:abc-1-2-65536", remapKey("sha256:abc", m))
}

// TestChownTreeMapsOwnersOnceAndKeepsSetuid: every file, directory and symlink (not its
// target) gets the mapped ids of its owner, a hard-linked inode is mapped once, and
// setuid/setgid bits survive the chown.
func TestChownTreeMapsOwnersOnceAndKeepsSetuid(t *testing.T) {
	testenv.RequireRoot(t, "chown needs root")
	root := t.TempDir()
	m := idMap{HostUID: 100000, HostGID: 200000, Size: 65536}
	write := func(name string, mode fs.FileMode, uid, gid int) string {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(name), 0o644))
		require.NoError(t, os.Chown(p, uid, gid))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	suid := write("bin/su", 0o755|fs.ModeSetuid|fs.ModeSetgid, 0, 0)
	vcap := write("home/vcap/app", 0o600, 2000, 2000)
	require.NoError(t, os.Link(vcap, filepath.Join(root, "home/vcap/link")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "bin/link")))
	big := write("big", 0o644, 70000, 70000)

	require.NoError(t, chownTree(root, m))

	owner := func(p string) (uint32, uint32, fs.FileMode) {
		info, err := os.Lstat(p)
		require.NoError(t, err)
		st := info.Sys().(*syscall.Stat_t)
		return st.Uid, st.Gid, info.Mode()
	}
	uid, gid, mode := owner(suid)
	require.Equal(t, []uint32{100000, 200000}, []uint32{uid, gid})
	require.Equal(t, 0o755|fs.ModeSetuid|fs.ModeSetgid, mode)
	uid, gid, _ = owner(vcap)
	require.Equal(t, []uint32{102000, 202000}, []uint32{uid, gid}, "a hard link is mapped once")
	uid, _, _ = owner(filepath.Join(root, "bin/link"))
	require.Equal(t, uint32(100000), uid)
	passwd, _, _ := owner("/etc/passwd")
	require.Equal(t, uint32(0), passwd, "symlinks are not followed")
	uid, _, _ = owner(big)
	require.Equal(t, uint32(100000+overflowID), uid)
	uid, gid, _ = owner(root)
	require.Equal(t, []uint32{100000, 200000}, []uint32{uid, gid}, "the root itself")
}
