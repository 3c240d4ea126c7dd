package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/devstacktest"
	"drover.dev/devstack/router"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// emitterRestartSlack is what a restart may take beyond one register interval: the process
// start, its first BBS sync, the greet and the polling of the router's table.
const emitterRestartSlack = 3 * time.Second

// TestRoutingEmitterKillAndNATSRestart (acceptance 3): the route-emitter is killed
// with SIGKILL while instances come, go and change routes, and restarted: within one
// register interval the router's table is exactly the BBS's (nothing lost, nothing
// stale). Then NATS restarts: the emitter reconnects and registers every route again.
func TestRoutingEmitterKillAndNATSRestart(t *testing.T) {
	rs := newRoutedStack(t, 1, devstacktest.RoutingOptions{})
	const (
		scaled, scaledHost     = "routed-kill-scaled", "routed-kill-scaled.example.com"
		shrunk, shrunkHost     = "routed-kill-shrunk", "routed-kill-shrunk.example.com"
		moved, movedHost, next = "routed-kill-moved", "routed-kill-moved.example.com", "routed-kill-moved-2.example.com"
	)
	rs.desire(t, routedLRP(t, scaled, scaledHost, 1))
	rs.desire(t, routedLRP(t, shrunk, shrunkHost, 2))
	rs.desire(t, routedLRP(t, moved, movedHost, 1))
	for guid, n := range map[string]int{scaled: 1, shrunk: 2, moved: 1} {
		rs.waitRunning(t, guid, n)
	}
	expected := func() routeTable { return rs.expectedTable(t) }
	rs.waitRouterTable(t, expected, routeWait, "before the kill")

	// Kill -9 during the changes: one scale-up, one scale-down, one route change.
	rs.scale(t, scaled, 2)
	require.NoError(t, rs.RouteEmitter.Kill(t.Context()))
	rs.scale(t, shrunk, 1)
	rs.reroute(t, moved, next)
	rs.waitRunning(t, scaled, 2)
	rs.waitActuals(t, shrunk, settleWait, "scaled down to 1", func(as []*modelsv1.ActualLRP) bool { return len(as) == 1 })
	require.NotEqual(t, expected().String(), rs.routerTable(t).String(), "the router cannot know the changes while the emitter is down")

	require.NoError(t, rs.RouteEmitter.Start(t.Context()))
	took := rs.waitRouterTable(t, expected, devstacktest.RegisterInterval+emitterRestartSlack, "after the emitter's restart")
	t.Logf("the router's table was exact %s after the restarted emitter was ready", took)
	want := expected()
	require.Contains(t, want, next)
	require.NotContains(t, want, movedHost)
	require.Len(t, want[scaledHost], 2)
	require.Len(t, want[shrunkHost], 1)

	// NATS restart: a recorder connected afterwards sees every route registered again.
	rs.NATS.Shutdown()
	require.NoError(t, rs.NATS.Restart(t.Context(), rs.Stack))
	rec := recordNATS(t, rs.NATS)
	for uri, addrs := range want {
		for _, addr := range addrs {
			rec.waitFirst(t, router.SubjectRegister, uri, addr, devstacktest.RegisterInterval+emitterRestartSlack)
		}
	}
	rs.waitRouterTable(t, expected, routeWait, "after the NATS restart")
	for _, host := range []string{scaledHost, shrunkHost, next} {
		status, body, err := rs.getThroughRouter(host)
		require.NoError(t, err)
		require.Equal(t, 200, status, "%s: %s", host, body)
	}
}
