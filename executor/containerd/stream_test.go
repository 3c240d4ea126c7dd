package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"drover.dev/executor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tarEntry is one entry of a test tar.
type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

// tarEntries builds a tar of entries (regular files when typ is 0).
func tarEntries(t *testing.T, entries ...tarEntry) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode}
		if hdr.Typeflag == 0 {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.body))
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		require.NoError(t, tw.WriteHeader(hdr))
		_, err := tw.Write([]byte(e.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &buf
}

// streamOutAll reads the whole tar StreamOut gives for p: entries by name, with the
// bodies of files and the targets of symlinks.
func streamOutAll(t *testing.T, r *Runtime, guid, p string) (map[string]*tar.Header, map[string]string, error) {
	t.Helper()
	rc, err := r.StreamOut(context.Background(), guid, p)
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	hdrs, bodies := map[string]*tar.Header{}, map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return hdrs, bodies, nil
		}
		if err != nil {
			return hdrs, bodies, err
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return hdrs, bodies, err
		}
		hdrs[hdr.Name], bodies[hdr.Name] = hdr, string(body)
	}
}

func TestStreamInKeepsOwnersModesAndLinks(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	create(t, r, spec)
	ctx := context.Background()

	exit, _, errOut := run(t, r, spec.Guid, "", "mkfifo /tmp/fifo && ln -s /home/vcap/app /app && ln -s ../../../../../.. /home/vcap/up")
	require.Zero(t, exit.Code, errOut)
	// Absolute and climbing symlinks of the container resolve inside it, as in a chroot.
	require.NoError(t, r.StreamIn(ctx, spec.Guid, "/app/deep/er", "vcap", tarEntries(t,
		tarEntry{name: "./", typ: tar.TypeDir, mode: 0o755},
		tarEntry{name: "bin/", typ: tar.TypeDir, mode: 0o750},
		tarEntry{name: "bin/run", body: "#!/bin/sh\n", mode: 0o755},
		tarEntry{name: "bin/suid", body: "x", mode: 0o4755},
		tarEntry{name: "lib/data", body: "data", mode: 0o640},
		tarEntry{name: "bin/link", typ: tar.TypeSymlink, link: "../lib/data"},
		tarEntry{name: "bin/abs", typ: tar.TypeSymlink, link: "/app/deep/er/lib"},
		tarEntry{name: "bin/hard", typ: tar.TypeLink, link: "lib/data"},
	)))
	require.NoError(t, r.StreamIn(ctx, spec.Guid, "/home/vcap/up/tmp/up", "", tarEntries(t, tarEntry{name: "f", body: "root's"})))

	exit, out, errOut := run(t, r, spec.Guid, "", `cd /home/vcap/app/deep && for p in . er er/bin er/bin/run er/bin/suid er/lib er/lib/data er/bin/link; do stat -c '%n %a %u:%g %F' $p; done
readlink er/bin/link; readlink er/bin/abs; cat er/bin/link; echo; stat -c '%h %i' er/lib/data er/bin/hard | uniq | wc -l; stat -c %h er/lib/data; cat /tmp/up/f`)
	require.Zero(t, exit.Code, errOut)
	assert.Equal(t, strings.Join([]string{
		". 755 2000:2000 directory",
		"er 755 2000:2000 directory",
		"er/bin 750 2000:2000 directory",
		"er/bin/run 755 2000:2000 regular file",
		"er/bin/suid 4755 2000:2000 regular file",
		"er/lib 755 2000:2000 directory",
		"er/lib/data 640 2000:2000 regular file",
		"er/bin/link 777 2000:2000 symbolic link",
		"../lib/data",
		"/app/deep/er/lib",
		"data",
		"1",
		"2",
		"root's",
	}, "\n"), out)

	// A directory entry where the container has a symlink keeps the symlink and never
	// changes its target.
	exit, _, errOut = run(t, r, spec.Guid, "", "ln -s /etc /home/vcap/etc-link")
	require.Zero(t, exit.Code, errOut)
	require.NoError(t, r.StreamIn(ctx, spec.Guid, "/home/vcap", "vcap", tarEntries(t, tarEntry{name: "etc-link/", typ: tar.TypeDir, mode: 0o777})))
	_, out, _ = run(t, r, spec.Guid, "", "stat -c '%a %u' /etc; readlink /home/vcap/etc-link")
	assert.Equal(t, "755 0\n/etc\n", out)

	// Out again: the tree through the container's symlink, with its symlinks as symlinks.
	hdrs, bodies, err := streamOutAll(t, r, spec.Guid, "/app/deep/er")
	require.NoError(t, err)
	require.Contains(t, hdrs, "er/bin/link")
	assert.Equal(t, byte(tar.TypeSymlink), hdrs["er/bin/link"].Typeflag)
	assert.Equal(t, "../lib/data", hdrs["er/bin/link"].Linkname)
	assert.Equal(t, "/app/deep/er/lib", hdrs["er/bin/abs"].Linkname)
	assert.Equal(t, byte(tar.TypeDir), hdrs["er/bin/"].Typeflag)
	assert.Equal(t, "data", bodies["er/lib/data"])
	assert.Equal(t, int64(0o4755), hdrs["er/bin/suid"].Mode&0o7777)
	assert.Equal(t, 2000, hdrs["er/lib/data"].Uid)

	// A FIFO is archived as one, never opened (which would block).
	hdrs, _, err = streamOutAll(t, r, spec.Guid, "/tmp/fifo")
	require.NoError(t, err)
	assert.Equal(t, byte(tar.TypeFifo), hdrs["fifo"].Typeflag)
}

func TestStreamInRefusesEscapingEntriesAndNamesOnlyContainerPaths(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	create(t, r, spec)
	ctx := context.Background()

	for _, tc := range []struct {
		entry   tarEntry
		wantErr string
	}{
		{tarEntry{name: "../evil", body: "x"}, `stream in /home/vcap/app: archive entry "../evil": its name has a ".." component`},
		{tarEntry{name: "/etc/evil", body: "x"}, `stream in /home/vcap/app: archive entry "/etc/evil": its name is an absolute path`},
		{tarEntry{name: "etc", typ: tar.TypeSymlink, link: "/etc"}, `stream in /home/vcap/app: archive entry "etc": symlink target "/etc" points outside /home/vcap/app`},
		{tarEntry{name: "shadow", typ: tar.TypeLink, link: "../../../etc/shadow"}, `archive entry "shadow": hard link target "../../../etc/shadow" has a ".." component`},
	} {
		err := r.StreamIn(ctx, spec.Guid, "/home/vcap/app", "vcap", tarEntries(t, tarEntry{name: "ok", body: "fine"}, tc.entry))
		require.Error(t, err, tc.entry.name)
		assert.Contains(t, err.Error(), tc.wantErr)
	}
	_, out, _ := run(t, r, spec.Guid, "", "ls /home/vcap /etc | grep -c evil")
	assert.Equal(t, "0\n", out, "nothing of the refused entries was written")

	// Errors name container paths, never the host's view of them.
	_, err := r.StreamOut(ctx, spec.Guid, "/no/such/file")
	require.EqualError(t, err, "stream out /no/such/file: open /no/such/file: no such file or directory")
	err = r.StreamIn(ctx, spec.Guid, "/etc/passwd/x", "", tarEntries(t, tarEntry{name: "f", body: "x"}))
	require.EqualError(t, err, "stream in /etc/passwd/x: open /etc/passwd/x: not a directory")
	err = r.StreamIn(ctx, spec.Guid, "/tmp", "", tarEntries(t, tarEntry{name: "d/", typ: tar.TypeDir}, tarEntry{name: "d", body: "x"}))
	require.EqualError(t, err, "stream in /tmp: extract /tmp/d: file exists")
	whole, err := io.ReadAll(tarEntries(t, tarEntry{name: "big", body: strings.Repeat("x", 4096)}))
	require.NoError(t, err)
	err = r.StreamIn(ctx, spec.Guid, "/tmp", "", bytes.NewReader(whole[:2048]))
	require.EqualError(t, err, "stream in /tmp: extract /tmp/big: unexpected EOF", "a broken stream says so")

	// A tree deeper than maxStreamOutDepth is refused, not walked with ever more handles.
	exit, _, errOut := run(t, r, spec.Guid, "", fmt.Sprintf(`mkdir /tmp/deep && cd /tmp/deep && i=0; while [ $i -lt %d ]; do mkdir d; cd d; i=$((i+1)); done`, maxStreamOutDepth+1))
	require.Zero(t, exit.Code, errOut)
	_, _, err = streamOutAll(t, r, spec.Guid, "/tmp/deep")
	require.ErrorContains(t, err, ": deeper than 1024 directories")
}

// buildSwapper builds the symlinkswapper test tool (a static binary) and returns it.
func buildSwapper(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "symlinkswapper")
	cmd := exec.Command("go", "build", "-o", out, "../internal/symlinkswapper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "build symlinkswapper: %s", msg)
	bin, err := os.ReadFile(out)
	require.NoError(t, err)
	return bin
}

// TestTransfersStayInsideWhileSymlinksSwap races transfers against a process of the
// container that keeps exchanging the directory they go through for a symlink to a
// host directory (the host's path: what the host would follow if it reopened a path
// string): nothing of the host is ever read, nothing is written to it.
func TestTransfersStayInsideWhileSymlinksSwap(t *testing.T) {
	swapperBin := buildSwapper(t)
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	create(t, r, spec)
	ctx := context.Background()

	hostDir := t.TempDir()
	canary := "canary-" + randHex(t, 16)
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "canary"), []byte(canary), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(hostDir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "sub", "canary"), []byte(canary), 0o644))

	require.NoError(t, r.StreamIn(ctx, spec.Guid, "/home/vcap/bin", "vcap",
		tarEntries(t, tarEntry{name: "symlinkswapper", body: string(swapperBin), mode: 0o755})))
	var swapperOut syncBuffer
	swapper, err := r.Exec(ctx, spec.Guid, executor.ProcessSpec{
		ID: "swapper", Path: "/home/vcap/bin/symlinkswapper", Args: []string{"/home/vcap/d", hostDir, "/tmp/swaps"},
		User: "vcap", Stdout: &swapperOut, Stderr: &swapperOut,
	})
	require.NoError(t, err)
	defer func() { _ = swapper.Signal(ctx, syscall.SIGKILL) }()
	swaps := func() string {
		_, bodies, _ := streamOutAll(t, r, spec.Guid, "/tmp/swaps")
		return strings.TrimSpace(bodies["swaps"])
	}
	require.Eventually(t, func() bool { return swaps() != "" }, 20*time.Second, 50*time.Millisecond,
		"the swapper never swapped: %s", swapperOut.String())

	sawDecoy := false
	for i := range 200 {
		_ = r.StreamIn(ctx, spec.Guid, "/home/vcap/d/sub", "vcap", tarEntries(t,
			tarEntry{name: fmt.Sprintf("in-%d", i), body: "x"},
			tarEntry{name: "new/", typ: tar.TypeDir, mode: 0o755},
			tarEntry{name: "new/f", body: "x"},
			tarEntry{name: "l", typ: tar.TypeSymlink, link: "new/f"}))
		for _, p := range []string{"/home/vcap/d/canary", "/home/vcap/d/sub/canary", "/home/vcap/d/sub", "/home/vcap/d", "/home/vcap"} {
			_, bodies, _ := streamOutAll(t, r, spec.Guid, p)
			for name, body := range bodies {
				require.NotContains(t, body, canary, "%s in the stream of %s is the host's", name, p)
				if strings.Contains(body, "decoy") {
					sawDecoy = true
				}
			}
		}
	}
	t.Logf("swaps during the test: %s", swaps())
	assert.True(t, sawDecoy, "some transfers went through the directory")
	require.NoError(t, swapper.Signal(ctx, syscall.SIGKILL))
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = swapper.Wait(waitCtx)
	require.NoError(t, err)
	assert.Empty(t, swapperOut.String(), "the swapper kept swapping")

	var names []string
	err = filepath.WalkDir(hostDir, func(p string, _ os.DirEntry, err error) error {
		names = append(names, strings.TrimPrefix(p, hostDir))
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"", "/canary", "/sub", "/sub/canary"}, names, "nothing was written to the host directory")
}
