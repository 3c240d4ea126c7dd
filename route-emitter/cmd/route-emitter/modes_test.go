package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/lib/proctest"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// listRoutes calls the emitter's RouteEmitterService.ListRoutes.
func listRoutes(t *testing.T, e *emitterUnderTest, certs certFiles) *routeemitterv1.ListRoutesResponse {
	t.Helper()
	conn := bbsClient(t, e.config["listen_address"].(string), certs) // a plain gRPC connection with the client cert
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := routeemitterv1.NewRouteEmitterServiceClient(conn.Conn).ListRoutes(ctx, &routeemitterv1.ListRoutesRequest{})
	require.NoError(t, err)
	return resp
}

// TestLocalModeEmitsOnlyItsCell: an emitter with cell_id cell-1 registers the
// endpoints of instances on cell-1 (found by its first sync and by events), never
// those on cell-2 within several register intervals, and takes no lock.
func TestLocalModeEmitsOnlyItsCell(t *testing.T) {
	certs := testCerts(t)
	bbsAddr := proctest.ReserveAddress(t)
	bbs := startBBSAt(t, bbsAddr, certs)
	ns := startNATS(t)
	rec := recordRegisters(t, ns.ClientURL())

	desireRoutedLRP(t, bbs, "web", "web.example.com", 2)
	desireRoutedLRP(t, bbs, "api", "api.example.com", 2)
	beforeStart := []instance{
		{processGUID: "web", index: 0, cellID: "cell-1", guid: "web-0-cell-1", hostPort: 61000},
		{processGUID: "web", index: 1, cellID: "cell-2", guid: "web-1-cell-2", hostPort: 61001},
	}
	afterStart := []instance{
		{processGUID: "api", index: 0, cellID: "cell-2", guid: "api-0-cell-2", hostPort: 61002},
		{processGUID: "api", index: 1, cellID: "cell-1", guid: "api-1-cell-1", hostPort: 61003},
	}
	for _, i := range beforeStart {
		i.run(t, bbs)
	}

	e := startEmitter(t, "local-emitter", bbsAddr, ns.ClientURL(), certs, map[string]any{
		"cell_id": "cell-1", "register_interval": "300ms",
	})
	e.waitStarted(t)
	for _, i := range afterStart {
		i.run(t, bbs)
	}

	// The cell-1 instances are registered (sync and event paths), then re-registered
	// at least three more times: several register intervals went by.
	rec.waitCount(t, e, "web-0-cell-1", 4)
	rec.waitCount(t, e, "api-1-cell-1", 4)
	for _, i := range append(beforeStart, afterStart...) {
		if i.cellID == "cell-1" {
			got, _ := rec.last(i.guid)
			assert.Equal(t, i.address(), got.Host, "%s host", i)
			assert.Equal(t, i.hostPort, got.Port, "%s port", i)
			continue
		}
		assert.Zero(t, rec.count(i.guid), "%s is on another cell and must never be registered", i)
	}

	assert.Empty(t, routeEmitterLocks(t, bbs), "a local emitter takes no route_emitter lock")
	assert.Zero(t, e.countLogs(func(l logEntry) bool { return strings.HasPrefix(l.str("msg"), "lock-") }), "no lock activity in local mode")

	resp := listRoutes(t, e, certs)
	assert.Equal(t, "local", resp.GetMode())
	assert.Equal(t, "cell-1", resp.GetCellId())
	assert.True(t, resp.GetActive())
	for _, r := range resp.GetRoutes() {
		for _, ep := range r.GetEndpoints() {
			assert.Contains(t, ep.GetInstanceGuid(), "cell-1", "route %s lists an endpoint of another cell", r.GetHostname())
		}
	}
}

// TestGlobalModeOneActiveEmitter: of two global emitters on one BBS and NATS, exactly
// one holds the route_emitter lock and publishes; the standby publishes nothing
// (its NATS connection's message count stays put). After SIGKILL of the active one
// the standby takes the lock within lock TTL + retry interval and registers the routes.
func TestGlobalModeOneActiveEmitter(t *testing.T) {
	const (
		lockTTL       = 2 * time.Second
		lockRetry     = 500 * time.Millisecond
		takeoverSlack = 3 * time.Second // BBS clock granularity, process start of the watcher
	)
	certs := testCerts(t)
	bbsAddr := proctest.ReserveAddress(t)
	bbs := startBBSAt(t, bbsAddr, certs)
	ns := startNATS(t)
	rec := recordRegisters(t, ns.ClientURL())

	desireRoutedLRP(t, bbs, "web", "web.example.com", 1)
	web := instance{processGUID: "web", index: 0, cellID: "cell-1", guid: "web-0", hostPort: 61000}
	web.run(t, bbs)

	// greet_interval long: after its one greet an emitter publishes only as the active one.
	cfg := map[string]any{"lock_ttl": lockTTL.String(), "lock_retry_interval": lockRetry.String(),
		"register_interval": "300ms", "greet_interval": "1h"}
	active := startEmitter(t, "emitter-a", bbsAddr, ns.ClientURL(), certs, cfg)
	active.waitStarted(t)
	require.Equal(t, []string{"emitter-a"}, routeEmitterLocks(t, bbs))
	conns := emitterConnections(t, ns)
	require.Len(t, conns, 1)
	var activeCID uint64
	for cid := range conns {
		activeCID = cid
	}
	rec.waitCount(t, active, web.guid, 1)

	standby := startEmitter(t, "emitter-b", bbsAddr, ns.ClientURL(), certs, cfg)
	require.Eventually(t, func() bool {
		standby.running(t)
		return standby.countLogs(withMessage("lock-not-acquired")) >= 2
	}, waitTimeout, pollEvery, "standby retries the lock\n%s", standby.Output())
	var standbyCID uint64
	for cid := range emitterConnections(t, ns) {
		if cid != activeCID {
			standbyCID = cid
		}
	}
	require.NotZero(t, standbyCID, "the standby keeps a NATS connection")
	standbyBaseline := publishedBy(t, ns, standbyCID)

	// The active one re-registers three more times; the standby publishes nothing.
	rec.waitCount(t, active, web.guid, rec.count(web.guid)+3)
	assert.Equal(t, standbyBaseline, publishedBy(t, ns, standbyCID), "the standby published while another emitter held the lock")
	assert.Equal(t, []string{"emitter-a"}, routeEmitterLocks(t, bbs), "exactly one lock holder")
	assert.NotContains(t, standby.Output(), `"msg":"route-emitter-started"`, "the standby waits at the lock")
	assert.Zero(t, standby.countLogs(withMessage("re-registered")), "the standby re-registered")

	active.Signal(t, syscall.SIGKILL)
	killed := time.Now()
	<-active.Exited()
	registersAtKill := rec.count(web.guid)

	require.Eventually(t, func() bool {
		standby.running(t)
		owners := routeEmitterLocks(t, bbs)
		return len(owners) == 1 && owners[0] == "emitter-b"
	}, lockTTL+lockRetry+takeoverSlack, pollEvery, "standby takes the lock within ttl+retry\n%s", standby.Output())
	t.Logf("lock taken over %s after the kill", time.Since(killed).Round(time.Millisecond))

	standby.waitStarted(t)
	rec.waitCount(t, standby, web.guid, registersAtKill+1)
	require.Eventually(t, func() bool { return publishedBy(t, ns, standbyCID) > standbyBaseline }, waitTimeout, pollEvery,
		"the new active emitter publishes")
	got, _ := rec.last(web.guid)
	assert.Equal(t, []string{"web.example.com"}, got.URIs)
	assert.Equal(t, web.address(), got.Host)
	assert.Equal(t, web.hostPort, got.Port)
	assert.True(t, listRoutes(t, standby, certs).GetActive())
}
