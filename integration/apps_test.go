package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestApps drives apps by name on the real stack (issue 17.3): apps, app, logs,
// scale, restart and delete NAME, a re-push keeping the instance count, logs
// --previous after a crash, and a rolling restart through the router without a
// failed request.
func TestApps(t *testing.T) {
	ps := newPushStack(t, 1)
	token := fmt.Sprintf("%d", time.Now().UnixNano())
	const name = "appsweb"
	host := name + "." + appsDomain

	requireOK(t, ps.push(t, staticApp(t, "apps v1 "+token), name, "--instances", "2"))
	ps.waitServing(t, host, "apps v1 "+token)
	first := ps.onlyApp(t, name)

	t.Run("apps lists the app by name", func(t *testing.T) {
		row := tableRow(requireOK(t, ps.droverctlRun(t, "apps")), name)
		require.NotNil(t, row, "no row for %s", name)
		version := strings.TrimPrefix(first.GetProcessGuid(), first.GetLogGuid()+"-")
		require.Equal(t, []string{name, version, "2/2", host}, row[:4])
	})

	t.Run("app shows instances and recent events", func(t *testing.T) {
		out := requireOK(t, ps.droverctlRun(t, "app", name))
		require.Contains(t, out, "instances:     2/2 running")
		require.Contains(t, out, "routes:        "+host)
		instances, events, found := strings.Cut(out, "Recent events:")
		require.True(t, found, out)
		require.Equal(t, 2, strings.Count(instances, " RUNNING "), out)
		require.Contains(t, events, "desired_lrp_created", "the push is among the app's recent events")
	})

	t.Run("logs by name", func(t *testing.T) {
		out := requireOK(t, ps.droverctlRun(t, "logs", name))
		require.Contains(t, out, "Container became healthy")
		require.Contains(t, out, "/1] ", "both instances' lines")
	})

	t.Run("scale by name, and a re-push without -i keeps the count", func(t *testing.T) {
		requireOK(t, ps.droverctlRun(t, "scale", name, "3"))
		ps.waitRunning(t, first.GetProcessGuid(), 3)

		out := requireOK(t, ps.push(t, staticApp(t, "apps v2 "+token), name))
		require.Contains(t, out, "Keeping the 3 instances of "+first.GetProcessGuid())
		ps.waitServing(t, host, "apps v2 "+token)
		second := ps.onlyApp(t, name)
		require.NotEqual(t, first.GetProcessGuid(), second.GetProcessGuid(), "a new version")
		require.EqualValues(t, 3, second.GetInstances(), "the re-push kept the running count")
		ps.waitRunning(t, second.GetProcessGuid(), 3)
	})

	t.Run("restart by name without a failed request", func(t *testing.T) {
		before := ps.onlyApp(t, name)
		poll := ps.pollRouter(host)
		stopped := false
		defer func() {
			if !stopped {
				poll.stop()
			}
		}()
		require.Eventually(t, func() bool { return poll.requests() >= 10 }, routeWait, cellPoll, "the poller is running")
		out := requireOK(t, ps.droverctlRun(t, "restart", name))
		require.Contains(t, out, "Routers send traffic to ")
		// Keep polling a while after the old instances went away.
		after := poll.requests()
		require.Eventually(t, func() bool { return poll.requests() >= after+25 }, routeWait, cellPoll)
		stats := poll.stop()
		stopped = true
		t.Logf("%d requests through the router during the restart", stats.requests)
		require.Empty(t, stats.failures, "requests failed during the restart")

		now := ps.onlyApp(t, name)
		require.NotEqual(t, before.GetProcessGuid(), now.GetProcessGuid(), "the instances were replaced")
		require.EqualValues(t, 3, now.GetInstances())
		require.Equal(t, before.GetLogGuid(), now.GetLogGuid(), "the same app")
		ps.waitRunning(t, now.GetProcessGuid(), 3)
		ps.waitServing(t, host, "apps v2 "+token)
	})

	t.Run("logs --previous after a crash", func(t *testing.T) {
		const crashy = "appscrashy"
		crashyHost := crashy + "." + appsDomain
		requireOK(t, ps.push(t, crashyApp(t, token), crashy))
		ps.waitServing(t, crashyHost, "crashy ok")
		guid := ps.onlyApp(t, crashy).GetProcessGuid()

		code, body, err := ps.getPathThroughRouter(crashyHost, "/cgi-bin/crash")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, body)
		restarted := ps.waitActuals(t, guid, settleWait, "a crash and a restart", func(as []*modelsv1.ActualLRP) bool {
			return len(as) == 1 && as[0].GetCrashCount() >= 1 && as[0].GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
		})
		require.Contains(t, restarted[0].GetCrashReason(), "Exited with status 7")

		out := requireOK(t, ps.droverctlRun(t, "logs", "--previous", crashy))
		require.Contains(t, out, "last words of crashy "+token)
		require.Contains(t, out, "crashy serving on port")

		table := requireOK(t, ps.droverctlRun(t, "actual-lrps", "--guid", guid))
		require.Contains(t, table, "REASON")
		require.Contains(t, table, "Exited with status 7", "the crash reason is in the table")

		out = requireOK(t, ps.droverctlRun(t, "app", crashy))
		require.Contains(t, out, "Exited with status 7")
		require.Contains(t, out, "actual_lrp_crashed", "the crash is among the recent events")
	})

	t.Run("delete by name", func(t *testing.T) {
		requireOK(t, ps.droverctlRun(t, "delete", name))
		requireOK(t, ps.droverctlRun(t, "delete", "appscrashy"))
		require.Empty(t, ps.appLRPs(t, name))
		require.Empty(t, ps.appLRPs(t, "appscrashy"))
		out := requireOK(t, ps.droverctlRun(t, "apps"))
		require.Nil(t, tableRow(out, name))
		require.Eventually(t, func() bool {
			return len(listActualLRPs(t, ps.bbs, &bbsv1.ListActualLRPsRequest{Domain: "apps"})) == 0
		}, settleWait, cellPoll, "the apps' instances are gone")
	})

	ps.deleteAllLRPs(t)
	ps.requireHostClean(t)
}
