package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/lib/proctest"
)

// TestMetrics: once an instance that turned RUNNING after the emitter started is
// registered, /metrics on the debug address shows the route, the published
// registers, the NATS connection and a RUNNING-to-registered latency sample.
func TestMetrics(t *testing.T) {
	certs := testCerts(t)
	bbsAddr := proctest.ReserveAddress(t)
	bbs := startBBSAt(t, bbsAddr, certs)
	ns := startNATS(t)
	rec := recordRegisters(t, ns.ClientURL())
	desireRoutedLRP(t, bbs, "web", "web.example.com", 1)

	e := startEmitter(t, "metrics-emitter", bbsAddr, ns.ClientURL(), certs, nil)
	e.waitStarted(t)
	web := instance{processGUID: "web", index: 0, cellID: "cell-1", guid: "web-0", hostPort: 61000}
	web.run(t, bbs)
	rec.waitCount(t, e, web.guid, 1)

	wanted := map[string]float64{
		"drover_route_emitter_routes_total":                        1,
		"drover_route_emitter_registered_messages_total":           1,
		"drover_route_emitter_nats_connected":                      1,
		"drover_route_emitter_running_to_registered_seconds_count": 1,
	}
	var got map[string]float64
	require.Eventually(t, func() bool {
		got = e.metrics(t)
		for name, least := range wanted {
			if got[name] < least {
				return false
			}
		}
		return true
	}, waitTimeout, pollEvery, "metrics reach their minimums")
	for name, least := range wanted {
		assert.GreaterOrEqual(t, got[name], least, name)
	}
	assert.Equal(t, 1.0, got["drover_route_emitter_nats_connected"], "nats_connected is a 0/1 gauge")
}
