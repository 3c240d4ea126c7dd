package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestPush drives `droverctl push` on the real stack (fileserver, staging task on a
// containerd cell, the LRP, the route-emitter and the stand-in router), as a Cloud
// Controller would: issue 6's acceptance 1 to 4.
func TestPush(t *testing.T) {
	ps := newPushStack(t, 1)

	t.Run("static site", func(t *testing.T) {
		res := ps.push(t, ps.example("static-site"), "hello", "--instances", "2")
		require.NoError(t, res.err, res.output())
		ps.requireStaged(t, res, "static")
		ps.waitServing(t, "hello."+appsDomain, "Hello from drover")
		lrps := ps.appLRPs(t, "hello")
		require.Len(t, lrps, 1)
		require.EqualValues(t, 2, lrps[0].GetInstances())
		ps.waitRunning(t, lrps[0].GetProcessGuid(), 2)
	})

	t.Run("shell app", func(t *testing.T) {
		res := ps.push(t, ps.example("shell-app"), "shell")
		require.NoError(t, res.err, res.output())
		ps.requireStaged(t, res, "shell")
		ps.waitServing(t, "shell."+appsDomain, "shell app instance 0")
	})

	t.Run("resource matching uploads only what the server lacks", func(t *testing.T) {
		dir := copyDir(t, ps.example("static-site"))
		unique := fmt.Sprintf("unique %d\n", time.Now().UnixNano())
		require.NoError(t, os.WriteFile(filepath.Join(dir, "build-id.txt"), []byte(unique), 0o644))
		received := `drover_fileserver_package_files_total{source="received"}`

		before := ps.fileserverCounter(t, received)
		res := ps.push(t, dir, "matched")
		require.NoError(t, res.err, res.output())
		require.Equal(t, 1.0, ps.fileserverCounter(t, received)-before,
			"the first push uploads only the file the server has never seen (the others came with the static site)")

		before = ps.fileserverCounter(t, received)
		res = ps.push(t, dir, "matched")
		require.NoError(t, res.err, res.output())
		require.Equal(t, 0.0, ps.fileserverCounter(t, received)-before, "a push of unchanged bits uploads no file")
		require.Len(t, ps.appLRPs(t, "matched"), 1)

		index := filepath.Join(dir, "index.html")
		page, err := os.ReadFile(index)
		require.NoError(t, err)
		changed := strings.Replace(string(page), "Hello from drover", "Hello again "+unique, 1)
		require.NotEqual(t, string(page), changed)
		require.NoError(t, os.WriteFile(index, []byte(changed), 0o644))
		before = ps.fileserverCounter(t, received)
		res = ps.push(t, dir, "matched")
		require.NoError(t, res.err, res.output())
		require.Equal(t, 1.0, ps.fileserverCounter(t, received)-before, "a push with one changed file uploads that file only")
		ps.waitServing(t, "matched."+appsDomain, "Hello again")
	})

	t.Run("a changed app replaces the old version without a failed request", func(t *testing.T) {
		dir := copyDir(t, ps.example("static-site"))
		page := filepath.Join(dir, "index.html")
		require.NoError(t, os.WriteFile(page, []byte("<html><body>rollout v1</body></html>\n"), 0o644))
		res := ps.push(t, dir, "rollout", "--instances", "2")
		require.NoError(t, res.err, res.output())
		ps.waitServing(t, "rollout."+appsDomain, "rollout v1")
		old := ps.appLRPs(t, "rollout")
		require.Len(t, old, 1)

		poll := ps.pollRouter("rollout." + appsDomain)
		require.NoError(t, os.WriteFile(page, []byte("<html><body>rollout v2</body></html>\n"), 0o644))
		res = ps.push(t, dir, "rollout", "--instances", "2")
		require.NoError(t, res.err, res.output())
		// Keep polling while the old version's containers go away.
		require.Eventually(t, func() bool { return poll.seen("rollout v2") >= 25 }, routeWait, cellPoll,
			"the new version did not answer 25 requests after the push")
		stats := poll.stop()

		t.Logf("%d requests through the router during the rollout: %v", stats.requests, stats.bodies)
		require.Empty(t, stats.failures, "requests failed during the rollout")
		require.Positive(t, stats.bodies["rollout v1"], "the old version served during the push")
		require.Positive(t, stats.bodies["rollout v2"], "the new version served after the push")
		now := ps.appLRPs(t, "rollout")
		require.Len(t, now, 1, "the old version is removed")
		require.NotEqual(t, old[0].GetProcessGuid(), now[0].GetProcessGuid(), "a changed app is a new LRP (new version)")
	})

	t.Run("broken apps fail naming the cause and leave nothing", func(t *testing.T) {
		res := ps.push(t, ps.example("broken-app"), "broken")
		require.Error(t, res.err)
		require.Contains(t, res.stderr, "none of the buildpacks detected the app: busybox")
		require.Empty(t, ps.appLRPs(t, "broken"))

		res = ps.push(t, ps.example("crashing-app"), "crasher")
		require.Error(t, res.err)
		require.Contains(t, res.stderr, "crash")
		require.Contains(t, res.output(), "crashing on purpose", "the app's own output was shown")
		require.Empty(t, ps.appLRPs(t, "crasher"), "the crashed app's LRP was removed")

		res = ps.push(t, ps.example("static-site"), "nostack", "--stack", "cflinuxfs4")
		require.Error(t, res.err)
		require.Contains(t, res.stderr, `no cell serves stack "cflinuxfs4"`)
		require.Empty(t, ps.appLRPs(t, "nostack"))

		require.Empty(t, ps.tasks(t), "no staging task is left")
		ps.requireNoOrphanInstances(t)
	})

	ps.deleteAllLRPs(t)
	ps.requireHostClean(t)
}

// requireStaged checks a push's output: the staging task's log lines were streamed,
// the busybox buildpack detected kind ("static" or "shell"), the instances were waited for, and no task is left.
func (ps *pushStack) requireStaged(t *testing.T, res pushResult, kind string) {
	t.Helper()
	require.Contains(t, res.stdout, "[STG", "the staging task's log lines were streamed")
	require.Contains(t, res.stdout, "-----> Detected buildpack: busybox")
	require.Contains(t, res.stdout, map[string]string{"static": "Static site: busybox httpd", "shell": "Shell app: start.sh"}[kind])
	require.Contains(t, res.stdout, "instances running")
	require.Empty(t, ps.tasks(t), "the staging task is gone after the push")
}

// requireNoOrphanInstances waits until every actual LRP in the apps domain belongs to a
// desired LRP (a failed push left no instance behind).
func (ps *pushStack) requireNoOrphanInstances(t *testing.T) {
	t.Helper()
	var orphans []*modelsv1.ActualLRP
	require.Eventually(t, func() bool {
		resp, err := ps.bbs.ListDesiredLRPs(callCtx(t), &bbsv1.ListDesiredLRPsRequest{Domain: "apps"})
		if err != nil {
			return false
		}
		desired := map[string]bool{}
		for _, d := range resp.GetDesiredLrps() {
			desired[d.GetProcessGuid()] = true
		}
		orphans = nil
		for _, a := range listActualLRPs(t, ps.bbs, &bbsv1.ListActualLRPsRequest{Domain: "apps"}) {
			if !desired[a.GetProcessGuid()] {
				orphans = append(orphans, a)
			}
		}
		return len(orphans) == 0
	}, settleWait, cellPoll, "instances without a desired LRP are left")
}

// deleteAllLRPs removes every desired LRP and waits until no actual LRP is left.
func (ps *pushStack) deleteAllLRPs(t *testing.T) {
	t.Helper()
	resp, err := ps.bbs.ListDesiredLRPs(callCtx(t), &bbsv1.ListDesiredLRPsRequest{})
	require.NoError(t, err)
	for _, d := range resp.GetDesiredLrps() {
		_, err := ps.bbs.RemoveDesiredLRP(callCtx(t), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: d.GetProcessGuid()})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		return len(listActualLRPs(t, ps.bbs, &bbsv1.ListActualLRPsRequest{})) == 0
	}, settleWait, cellPoll, "actual LRPs left after removing every desired LRP")
}

// routerPoll sends GET requests through the router in the background until stopped.
type routerPoll struct {
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	stats pollStats
}

// pollStats counts what a routerPoll saw: bodies by content, and every failure.
type pollStats struct {
	requests int
	bodies   map[string]int
	failures []string
}

// pollRouter starts polling hostname through the router every 20 ms, counting the
// answers that hold each of bodies (default "rollout v1" and "rollout v2").
func (ps *pushStack) pollRouter(hostname string, bodies ...string) *routerPoll {
	if len(bodies) == 0 {
		bodies = []string{"rollout v1", "rollout v2"}
	}
	p := &routerPoll{done: make(chan struct{}), stats: pollStats{bodies: map[string]int{}}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			code, body, err := ps.getThroughRouter(hostname)
			p.mu.Lock()
			p.stats.requests++
			switch {
			case err != nil:
				p.stats.failures = append(p.stats.failures, fmt.Sprintf("%s: %v", time.Now().Format(time.StampMilli), err))
			case code != http.StatusOK:
				p.stats.failures = append(p.stats.failures, fmt.Sprintf("%s: %d %s", time.Now().Format(time.StampMilli), code, body))
			default:
				for _, v := range bodies {
					if strings.Contains(body, v) {
						p.stats.bodies[v]++
					}
				}
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// seen is how many answers held body so far.
func (p *routerPoll) seen(body string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.bodies[body]
}

// stop ends the polling and returns what it saw.
func (p *routerPoll) stop() pollStats {
	close(p.done)
	p.wg.Wait()
	return p.stats
}
