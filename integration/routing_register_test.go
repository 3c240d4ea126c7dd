package integration

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/devstacktest"
	"drover.dev/devstack/router"
)

// TestRoutingRegistersRunningInstances (acceptance 1 and an end-to-end check of 4):
// each instance of a routed 2-instance LRP is registered on NATS within a second of
// turning RUNNING, with the fields gorouter reads, and the stand-in router sends
// requests with that Host to both instances in turn.
func TestRoutingRegistersRunningInstances(t *testing.T) {
	rs := newRoutedStack(t, 1, devstacktest.RoutingOptions{})
	rec := recordNATS(t, rs.NATS)
	const guid, hostname = "routed-register", "routed-register.example.com"
	rs.desire(t, routedLRP(t, guid, hostname, 2))
	byIndex := rs.waitRunning(t, guid, 2)

	for index, a := range byIndex {
		addr := instanceAddress(t, a, httpPort)
		m := rec.waitFirst(t, router.SubjectRegister, hostname, addr, routeWait)
		running := time.Unix(0, a.GetSince())
		latency := m.At.Sub(running)
		t.Logf("instance %d (%s): RUNNING at %s, registered %s later", index, addr, running.Format("15:04:05.000"), latency)
		require.LessOrEqual(t, latency, registerLatency, "instance %d registered %s after it turned RUNNING", index, latency)

		// Every field gorouter reads, from the raw JSON.
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(m.Raw, &raw))
		for _, field := range []string{"host", "port", "uris", "app", "private_instance_id", "private_instance_index",
			"server_cert_domain_san", "tags", "endpoint_updated_at_ns"} {
			require.Contains(t, raw, field, "register of instance %d: %s", index, m.Raw)
		}
		require.Equal(t, a.GetNetInfo().GetAddress(), m.Msg.Host)
		require.Equal(t, []string{hostname}, m.Msg.URIs)
		require.Equal(t, guid, m.Msg.App, "app is the log guid")
		require.Equal(t, a.GetInstanceGuid(), m.Msg.PrivateInstanceID)
		require.Equal(t, strconv.Itoa(int(index)), m.Msg.PrivateInstanceIndex)
		require.Equal(t, a.GetInstanceGuid(), m.Msg.ServerCertDomainSAN)
		require.Equal(t, "route-emitter", m.Msg.Tags["component"])
		require.Equal(t, a.GetSince(), m.Msg.EndpointUpdatedAtNs, "a new endpoint's register carries its RUNNING time")
		if zone := a.GetAvailabilityZone(); zone != "" {
			require.Equal(t, zone, m.Msg.AvailabilityZone)
		}
	}

	rs.waitRouterTable(t, func() routeTable { return rs.expectedTable(t) }, routeWait, "two instances registered")
	var bodies []string
	for range 4 {
		status, body, err := rs.getThroughRouter(hostname)
		require.NoError(t, err)
		require.Equal(t, 200, status, body)
		bodies = append(bodies, body)
	}
	require.ElementsMatch(t, []string{"index=0", "index=1", "index=0", "index=1"}, bodies, "both instances answer")
	for i := 1; i < len(bodies); i++ {
		require.NotEqual(t, bodies[i-1], bodies[i], "round robin: consecutive requests reach the other instance (%v)", bodies)
	}

	status, _, err := rs.getThroughRouter("unknown.example.com")
	require.NoError(t, err)
	require.Equal(t, 404, status)
}
