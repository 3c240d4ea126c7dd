package commands_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/commands"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// buildpackEnv is ft's env pointing at a fresh fake stager.
func buildpackEnv(t *testing.T) (commands.Env, *fakeStager) {
	t.Helper()
	ft := startFakeBBS(t, nil)
	stager := startFakeStager(t, ft.pki, &fakeStager{})
	env := ft.env
	env.Vars = map[string]string{}
	for k, v := range ft.env.Vars {
		env.Vars[k] = v
	}
	env.Vars[commands.EnvStagerAddress] = stager.addr
	return env, stager
}

// writeBuildpackDir makes a buildpack directory with executable bin/ scripts.
func writeBuildpackDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mypack")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	for _, script := range []string{"detect", "compile", "release"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", script), []byte("#!/bin/sh\necho "+script+"\n"), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("docs\n"), 0o644))
	return dir
}

// tarModes lists a tar.gz's entries as name → mode.
func tarModes(t *testing.T, data []byte) map[string]int64 {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	modes := map[string]int64{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return modes
		}
		require.NoError(t, err)
		modes[hdr.Name] = hdr.Mode & 0o777
	}
}

func TestBuildpackCreateFromADirectoryKeepsModes(t *testing.T) {
	env, stager := buildpackEnv(t)
	dir := writeBuildpackDir(t)
	res := run(t, env, "buildpack", "create", "mypack", dir, "--position", "1")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "name:      mypack\n")
	require.Contains(t, res.stdout, "stack:     bookworm\n")
	require.Contains(t, res.stdout, "position:  1\n")
	require.Contains(t, res.stdout, "filename:  mypack.tgz\n")

	req := stager.recorded()[0].(*stagerv1.CreateBuildpackRequest)
	require.Equal(t, "mypack", req.GetName())
	require.Equal(t, "bookworm", req.GetStack(), "the default stack")
	require.EqualValues(t, 1, req.GetPosition())
	require.Equal(t, map[string]int64{"bin/": 0o755, "bin/detect": 0o755, "bin/compile": 0o755, "bin/release": 0o755, "README": 0o644},
		tarModes(t, req.GetArchive()))
}

func TestBuildpackCreateFromAnArchive(t *testing.T) {
	env, stager := buildpackEnv(t)
	archive := filepath.Join(t.TempDir(), "go-buildpack.zip")
	require.NoError(t, os.WriteFile(archive, []byte("PK-not-really"), 0o644))
	res := run(t, env, "buildpack", "create", "go", archive, "--stack", "busybox", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	var view map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &view))
	require.Equal(t, "go", view["name"])
	require.Equal(t, "busybox", view["stack"])
	require.Equal(t, "go-buildpack.zip", view["filename"])
	req := stager.recorded()[0].(*stagerv1.CreateBuildpackRequest)
	require.Equal(t, []byte("PK-not-really"), req.GetArchive(), "an archive is sent as it is")
	require.Zero(t, req.GetPosition(), "no --position: last")
}

func TestBuildpacksListsByStackAndPosition(t *testing.T) {
	env, _ := buildpackEnv(t)
	dir := writeBuildpackDir(t)
	for _, name := range []string{"staticfile", "nodejs", "go"} {
		res := run(t, env, "buildpack", "create", name, dir)
		require.Equal(t, commands.ExitOK, res.code, res.stderr)
	}
	res := run(t, env, "buildpack", "update", "go", "--position", "1")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "position:  1\n")

	res = run(t, env, "buildpacks")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 4)
	require.Regexp(t, `^POSITION\s+NAME\s+STACK\s+SHA256\s+SIZE\s+FILENAME$`, lines[0])
	require.Regexp(t, `^1\s+go\s+bookworm\s+[0-9a-f]{12}\s+\d+(\.\d)?[BK]\s+mypack\.tgz$`, lines[1])
	require.Regexp(t, `^2\s+staticfile\s`, lines[2])
	require.Regexp(t, `^3\s+nodejs\s`, lines[3])

	res = run(t, env, "buildpacks", "--stack", "busybox")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, 1, strings.Count(res.stdout, "\n"), "only the header: no busybox buildpacks")

	res = run(t, env, "buildpacks", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, 3, strings.Count(res.stdout, "\n"))
	require.Contains(t, res.stdout, `"name":"go","stack":"bookworm","position":1`)
}

func TestBuildpackUpdateReplacesTheArchive(t *testing.T) {
	env, stager := buildpackEnv(t)
	dir := writeBuildpackDir(t)
	require.Equal(t, commands.ExitOK, run(t, env, "buildpack", "create", "mine", dir).code)
	archive := filepath.Join(t.TempDir(), "mine-2.tar.gz")
	require.NoError(t, os.WriteFile(archive, []byte("v2"), 0o644))
	res := run(t, env, "buildpack", "update", "mine", "--path", archive)
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "filename:  mine-2.tar.gz\n")
	reqs := stager.recorded()
	req := reqs[len(reqs)-1].(*stagerv1.UpdateBuildpackRequest)
	require.Equal(t, []byte("v2"), req.GetArchive())
	require.Zero(t, req.GetPosition(), "not moved")
}

func TestBuildpackDelete(t *testing.T) {
	env, _ := buildpackEnv(t)
	dir := writeBuildpackDir(t)
	require.Equal(t, commands.ExitOK, run(t, env, "buildpack", "create", "mine", dir, "--stack", "busybox").code)
	res := run(t, env, "buildpack", "delete", "mine", "--stack", "busybox")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "deleted buildpack mine of stack busybox\n", res.stdout)

	res = run(t, env, "buildpack", "delete", "mine", "--stack", "busybox")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Equal(t, "droverctl: ResourceNotFound: stager at "+env.Vars[commands.EnvStagerAddress]+": buildpack \"mine\" is not registered for stack \"busybox\"\n", res.stderr)
}

func TestBuildpackCommandsNameTheUnreachableStager(t *testing.T) {
	env, _ := buildpackEnv(t)
	addr := unreachableAddress(t)
	res := run(t, env, "buildpacks", "--stager", addr)
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "droverctl: Unavailable: stager at "+addr+": ")
}

func TestBuildpackPathErrors(t *testing.T) {
	env, stager := buildpackEnv(t)
	notArchive := filepath.Join(t.TempDir(), "pack.rar")
	require.NoError(t, os.WriteFile(notArchive, []byte("x"), 0o644))
	res := run(t, env, "buildpack", "create", "mine", notArchive)
	require.Equal(t, commands.ExitUsage, res.code)
	require.Contains(t, res.stderr, "buildpack PATH "+notArchive+" must be a directory or a .zip, .tgz or .tar.gz archive")

	res = run(t, env, "buildpack", "create", "mine", filepath.Join(t.TempDir(), "missing"))
	require.Equal(t, commands.ExitUsage, res.code)
	require.Contains(t, res.stderr, "buildpack PATH: stat ")
	require.Empty(t, stager.recorded(), "nothing reached the stager")
}
