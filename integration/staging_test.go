package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/devstacktest"
	repconfig "drover.dev/rep/config"
)

// bookwormPush is the flags of a push to the bookworm stack.
var bookwormPush = []string{"--stack", "bookworm", "-m", "256M", "--disk", "256M"}

// newBookwormStack starts two cells, the routing side, a fileserver and a stager with
// the tree's buildpacks; only cell-1 has the bookworm stack.
func newBookwormStack(t *testing.T) *pushStack {
	t.Helper()
	return newPushStackWith(t, devstacktest.Options{
		Cells:  2,
		Stager: &devstacktest.StagerOptions{Bookworm: true},
		ConfigureRep: func(i int, c *repconfig.Config) {
			// Room for the apps, their next versions during a rollout and the staging
			// tasks at once (the capacity is the auction's bookkeeping).
			c.MemoryMB, c.DiskMB = 16384, 32768
			if i == 2 {
				delete(c.PreloadedRootFSes, "bookworm")
			}
		},
	})
}

// TestBuildpackPush is issue 15's acceptance 1 to 5 and 7: Node and Go apps staged by
// the buildpacks of the bookworm stack on real cells, through the stager.
func TestBuildpackPush(t *testing.T) {
	ps := newBookwormStack(t)
	nodeDir := copyDir(t, ps.example("node-express"))
	goDir := copyDir(t, ps.example("go-web"))

	t.Run("node-express and go-web run with 2 instances each, routed", func(t *testing.T) {
		res := ps.push(t, nodeDir, "node", append(bookwormPush, "-i", "2")...)
		require.NoError(t, res.err, res.output())
		require.Contains(t, res.stdout, "[STG/0]")
		require.Contains(t, res.stdout, "added ", "npm's own output was streamed")
		require.Contains(t, res.stdout, "Staged node: nodejs buildpack")
		require.Contains(t, res.stdout, "on cell-1", "the staging task ran on the cell with the stack")
		ps.waitServing(t, "node."+appsDomain, "node-express v1")

		res = ps.push(t, goDir, "goweb", append(bookwormPush, "-i", "2")...)
		require.NoError(t, res.err, res.output())
		require.Contains(t, res.stdout, "go: downloading github.com/go-chi/chi/v5", "go's own output was streamed")
		require.Contains(t, res.stdout, "Staged goweb: go buildpack")
		ps.waitServing(t, "goweb."+appsDomain, "go-web v1")
		for _, name := range []string{"node", "goweb"} {
			lrps := ps.appLRPs(t, name)
			require.Len(t, lrps, 1)
			ps.waitRunning(t, lrps[0].GetProcessGuid(), 2)
		}
		require.Empty(t, ps.tasks(t), "no staging task is left")
	})

	t.Run("a changed source file stages from the cache and replaces v1 without a failed request", func(t *testing.T) {
		poll := ps.pollRouter("node."+appsDomain, "node-express v1", "node-express v2")
		replaceIn(t, filepath.Join(nodeDir, "server.js"), `const version = "v1"`, `const version = "v2"`)
		res := ps.push(t, nodeDir, "node", bookwormPush...)
		require.NoError(t, res.err, res.output())
		require.Eventually(t, func() bool { return poll.seen("node-express v2") >= 25 }, routeWait, cellPoll,
			"the new version did not answer 25 requests after the push")
		stats := poll.stop()
		t.Logf("%d requests through the router during the rollout: %v", stats.requests, stats.bodies)
		require.Empty(t, stats.failures, "requests failed during the rollout")
		require.Positive(t, stats.bodies["node-express v1"])
		require.Contains(t, res.stdout, "Restoring node_modules from cache")
		require.NotContains(t, res.stdout, "added ", "npm did not install the packages again")
		require.Len(t, ps.appLRPs(t, "node"), 1, "v1 is removed")

		replaceIn(t, filepath.Join(goDir, "main.go"), `const version = "v1"`, `const version = "v2"`)
		res = ps.push(t, goDir, "goweb", bookwormPush...)
		require.NoError(t, res.err, res.output())
		require.NotContains(t, res.stdout, "go: downloading", "the Go modules came from the cache")
		ps.waitServing(t, "goweb."+appsDomain, "go-web v2")
	})

	t.Run("buildpacks named with -b, a missing one, and an app none detects", func(t *testing.T) {
		dir := copyDir(t, ps.example("node-express"))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "Procfile"),
			[]byte("web: echo \"chained NODE_ENV=$NODE_ENV\" > index.html && exec python3 -m http.server $PORT\n"), 0o644))
		res := ps.push(t, dir, "chain", append(bookwormPush, "-b", "nodejs", "-b", "binary")...)
		require.NoError(t, res.err, res.output())
		require.Contains(t, res.stdout, "Staged chain: binary buildpack")
		ps.waitServing(t, "chain."+appsDomain, "chained NODE_ENV=production")

		res = ps.push(t, dir, "nope", append(bookwormPush, "-b", "nope")...)
		require.Error(t, res.err)
		require.Contains(t, res.stderr, `buildpack "nope" is not registered for stack "bookworm"`)
		require.NotContains(t, res.stdout, "Staging nope with task", "no staging task was desired")

		blobs := ps.blobCount(t)
		empty := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(empty, "README.txt"), []byte("nothing to run\n"), 0o644))
		res = ps.push(t, empty, "nothing", bookwormPush...)
		require.Error(t, res.err)
		require.Contains(t, res.stderr, "none of the buildpacks detected the app: staticfile, nodejs, go, binary")
		require.Empty(t, ps.appLRPs(t, "nothing"))
		require.Empty(t, ps.tasks(t))
		require.Equal(t, blobs, ps.blobCount(t), "no droplet and no build cache was stored (the package stays for a retry)")
	})

	t.Run("a failing bin/supply fails the push with the buildpack's last lines", func(t *testing.T) {
		dir := copyDir(t, ps.example("node-express"))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name": "broken",`), 0o644))
		res := ps.push(t, dir, "brokenjson", bookwormPush...)
		require.Error(t, res.err)
		require.Contains(t, res.stderr, "staging failed: buildpack nodejs: bin/supply exited with status 1")
		require.Contains(t, res.output(), "nodejs: package.json is not valid JSON")
		require.Empty(t, ps.appLRPs(t, "brokenjson"), "no LRP was desired")
		require.Empty(t, ps.tasks(t))
	})

	t.Run("stacks: busybox stages with its buildpack, an unserved stack fails naming it", func(t *testing.T) {
		res := ps.push(t, ps.example("static-site"), "bbsite", "--stack", "busybox")
		require.NoError(t, res.err, res.output())
		require.Contains(t, res.stdout, "Staged bbsite: busybox buildpack")
		ps.waitServing(t, "bbsite."+appsDomain, "Hello from drover")

		res = ps.push(t, ps.example("static-site"), "nostack", "--stack", "nostack")
		require.Error(t, res.err)
		require.Contains(t, res.stderr, `no cell serves stack "nostack"`)
		require.Empty(t, ps.appLRPs(t, "nostack"))
	})

	ps.deleteAllLRPs(t)
	ps.requireHostClean(t)
}

// replaceIn replaces old with new in the file at path (old must be there).
func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), old)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
}

// blobCount is the number of droplets and build caches on the stack's fileserver.
func (ps *pushStack) blobCount(t *testing.T) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(ps.Fileserver.Config.BlobDirectory, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && (strings.Contains(path, "droplets") || strings.Contains(path, "build-caches")) {
			n++
		}
		return err
	})
	require.NoError(t, err)
	return n
}
