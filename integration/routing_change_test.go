package integration

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/devstacktest"
	"drover.dev/devstack/router"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestRoutingScaleUpdateDelete (acceptance 2): scaling down unregisters the retired
// instance while its container still serves; a route update registers the new
// hostname and unregisters the old one; deleting the LRP unregisters everything.
func TestRoutingScaleUpdateDelete(t *testing.T) {
	rs := newRoutedStack(t, 1, devstacktest.RoutingOptions{})
	rec := recordNATS(t, rs.NATS)
	const guid, oldHost, newHost = "routed-change", "routed-change.example.com", "routed-change-2.example.com"
	lrp := routedLRP(t, guid, oldHost, 2)
	// Like an app that drains on SIGTERM, httpd keeps serving through the stop's grace
	// period (it inherits an ignored SIGTERM; SIGKILL ends it): the unregister must reach
	// the router while the retired instance still serves, whoever wins the race between
	// the route-emitter and the rep's SIGTERM.
	lrp.Action = shAction("trap '' TERM; " + httpdScript)
	rs.desire(t, lrp)
	byIndex := rs.waitRunning(t, guid, 2)
	rs.waitRouterTable(t, func() routeTable { return rs.expectedTable(t) }, routeWait, "two instances registered")

	// Scale to 1: when the retired instance's unregister arrives, its port still answers.
	retired := instanceAddress(t, byIndex[1], httpPort)
	retiredURL := hostURL(t, byIndex[1], httpPort)
	var once sync.Once
	probe := make(chan error, 1)
	rec.setHook(func(m natsMessage) {
		if m.Subject == router.SubjectUnregister && hasURI(m.Msg, oldHost) && messageAddress(m.Msg) == retired {
			once.Do(func() {
				c := &http.Client{Timeout: 2 * time.Second}
				resp, err := c.Get(retiredURL)
				if err == nil {
					resp.Body.Close()
				}
				probe <- err
			})
		}
	})
	rs.scale(t, guid, 1)
	rec.waitFirst(t, router.SubjectUnregister, oldHost, retired, routeWait)
	select {
	case err := <-probe:
		require.NoError(t, err, "the retired instance stopped serving before its unregister arrived")
	case <-time.After(routeWait):
		t.Fatal("the probe of the retired instance did not finish")
	}
	rs.waitActuals(t, guid, settleWait, "one instance left", func(as []*modelsv1.ActualLRP) bool { return len(as) == 1 })
	rs.waitRouterTable(t, func() routeTable {
		return routeTable{oldHost: {instanceAddress(t, byIndex[0], httpPort)}}
	}, routeWait, "scaled to 1")
	rec.setHook(nil)

	// Route update: the new hostname is registered, the old one unregistered.
	kept := instanceAddress(t, byIndex[0], httpPort)
	rs.reroute(t, guid, newHost)
	rec.waitFirst(t, router.SubjectRegister, newHost, kept, routeWait)
	rec.waitFirst(t, router.SubjectUnregister, oldHost, kept, routeWait)
	rs.waitRouterTable(t, func() routeTable { return routeTable{newHost: {kept}} }, routeWait, "rerouted")
	status, body, err := rs.getThroughRouter(newHost)
	require.NoError(t, err)
	require.Equal(t, 200, status, body)
	require.Equal(t, "index=0", body)
	status, _, err = rs.getThroughRouter(oldHost)
	require.NoError(t, err)
	require.Equal(t, 404, status)

	// Delete: everything unregistered.
	_, err = rs.bbs.RemoveDesiredLRP(callCtx(t), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid})
	require.NoError(t, err)
	rec.waitFirst(t, router.SubjectUnregister, newHost, kept, routeWait)
	rs.waitRouterTable(t, func() routeTable { return routeTable{} }, routeWait, "deleted")
	rs.waitActuals(t, guid, settleWait, "all instances gone", func(as []*modelsv1.ActualLRP) bool { return len(as) == 0 })
}
