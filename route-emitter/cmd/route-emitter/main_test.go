package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	"drover.dev/bbs/client"
	"drover.dev/lib/proctest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
	"drover.dev/route-emitter/routingtable"
)

const (
	waitTimeout = 30 * time.Second
	pollEvery   = 20 * time.Millisecond
)

// binDir holds the binaries TestMain builds: the route-emitter and the BBS.
var binDir string

func TestMain(m *testing.M) {
	proctest.BuildAndRun(m, &binDir, map[string]string{".": "route-emitter", "drover.dev/bbs/cmd/bbs": "bbs"})
}

// realBBS starts the bbs binary on a fresh database and returns a client, its gRPC
// address and the test certificates.
func realBBS(t *testing.T) (*client.Client, string, certFiles) {
	t.Helper()
	certs := testCerts(t)
	addr := proctest.ReserveAddress(t)
	return startBBSAt(t, addr, certs), addr, certs
}

// The NATS users of these tests: the emitter's, and a router's for the test's
// subscribers (the dev stack's users, scripts/nats.sh).
const (
	natsEmitterUser     = "route-emitter"
	natsEmitterPassword = "emitter-test-password-7c1e"
	natsRouterUser      = "router"
	natsRouterPassword  = "router-test-password-93ad"
)

// startNATS runs an embedded NATS server on an OS-chosen port that refuses clients
// without credentials (natsEmitterUser and natsRouterUser).
func startNATS(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, Users: []*server.User{
		{Username: natsEmitterUser, Password: natsEmitterPassword},
		{Username: natsRouterUser, Password: natsRouterPassword},
	}})
	require.NoError(t, err)
	go s.Start()
	require.True(t, s.ReadyForConnections(waitTimeout))
	t.Cleanup(s.Shutdown)
	return s
}

// TestRegistersARunningInstanceFromARealBBS: desire a routed LRP, claim and start its
// instance through the BBS API, and see router.register with the right uri, host and
// port on NATS, and the route in ListRoutes.
func TestRegistersARunningInstanceFromARealBBS(t *testing.T) {
	bbs, bbsAddr, files := realBBS(t)
	ns := startNATS(t)
	sub, err := nats.Connect(ns.ClientURL(), nats.UserInfo(natsRouterUser, natsRouterPassword))
	require.NoError(t, err)
	t.Cleanup(sub.Close)
	var mu sync.Mutex
	var registers []routingtable.RegistryMessage
	_, err = sub.Subscribe("router.register", func(m *nats.Msg) {
		var r routingtable.RegistryMessage
		if json.Unmarshal(m.Data, &r) == nil {
			mu.Lock()
			registers = append(registers, r)
			mu.Unlock()
		}
	})
	require.NoError(t, err)
	require.NoError(t, sub.Flush())

	listen := proctest.ReserveAddress(t)
	p := proctest.Start(t, "route-emitter", filepath.Join(binDir, "route-emitter"), "-config", proctest.WriteJSON(t, "route-emitter.json", map[string]any{
		"listen_address": listen, "debug_address": proctest.ReserveAddress(t), "bbs_address": bbsAddr, "tls": files("route-emitter"),
		"nats_addresses": []string{ns.ClientURL()}, "state_file": filepath.Join(t.TempDir(), "state.json"),
		"nats_username": natsEmitterUser, "nats_password_file": natsPasswordFile(t, natsEmitterPassword),
		"lock_owner": "emitter-under-test", "lock_retry_interval": "100ms", "log_level": "debug",
	}))

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err = bbs.UpsertDomain(ctx, &bbsv1.UpsertDomainRequest{Domain: "cf-apps", TtlSeconds: 3600})
	require.NoError(t, err)
	routes, err := structpb.NewValue([]any{map[string]any{"hostnames": []any{"web.example.com"}, "port": float64(8080)}})
	require.NoError(t, err)
	_, err = bbs.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: &modelsv1.DesiredLRP{
		ProcessGuid: "web", Domain: "cf-apps", Instances: 1, Rootfs: "preloaded:busybox", MemoryMb: 32, DiskMb: 32,
		LogGuid: "web-log", Ports: []uint32{8080}, Routes: map[string]*structpb.Value{"cf-router": routes},
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "root"}}},
	}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(p.Output(), "route-emitter-started") }, waitTimeout, pollEvery, "started\n%s", p.Output())

	ik := &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig-1", CellId: "cell-1"}
	_, err = bbs.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{ProcessGuid: "web", Index: 0, ActualLrpInstanceKey: ik})
	require.NoError(t, err)
	_, err = bbs.StartActualLRP(ctx, &bbsv1.StartActualLRPRequest{
		ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "web", Index: 0, Domain: "cf-apps"}, ActualLrpInstanceKey: ik,
		ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.1.2.3", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61001}}},
	})
	require.NoError(t, err)

	var got routingtable.RegistryMessage
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range registers {
			if r.PrivateInstanceID == "ig-1" {
				got = r
				return true
			}
		}
		return false
	}, waitTimeout, pollEvery, "router.register for ig-1\n%s", p.Output())
	assert.Equal(t, []string{"web.example.com"}, got.URIs)
	assert.Equal(t, "10.1.2.3", got.Host)
	assert.Equal(t, uint32(61001), got.Port)
	assert.Equal(t, "web-log", got.App)

	clientTLS, err := files("client").Client()
	require.NoError(t, err)
	conn, err := client.New(listen, clientTLS)
	require.NoError(t, err)
	defer conn.Close()
	resp, err := routeemitterv1.NewRouteEmitterServiceClient(conn.Conn).ListRoutes(ctx, &routeemitterv1.ListRoutesRequest{})
	require.NoError(t, err)
	require.Len(t, resp.GetRoutes(), 1)
	assert.Equal(t, "web.example.com", resp.GetRoutes()[0].GetHostname())
	assert.True(t, resp.GetActive())
	assert.Equal(t, "global", resp.GetMode())
	assert.True(t, resp.GetNatsConnected())
}
