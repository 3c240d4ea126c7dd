package commands_test

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"drover.dev/ctl/commands"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// fakeRouteEmitter answers ListRoutes with canned routes, filtered like the real one,
// and records every request.
type fakeRouteEmitter struct {
	routeemitterv1.UnimplementedRouteEmitterServiceServer
	resp *routeemitterv1.ListRoutesResponse
	err  error

	mu       sync.Mutex
	requests []*routeemitterv1.ListRoutesRequest
}

// startFakeRouteEmitter serves f with the fake BBS's server certificate and returns its address.
func startFakeRouteEmitter(t *testing.T, pki testPKI, f *fakeRouteEmitter) string {
	t.Helper()
	serverTLS, err := pki.server.Server()
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	routeemitterv1.RegisterRouteEmitterServiceServer(srv, f)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func (f *fakeRouteEmitter) ListRoutes(_ context.Context, req *routeemitterv1.ListRoutesRequest) (*routeemitterv1.ListRoutesResponse, error) {
	f.mu.Lock()
	f.requests = append(f.requests, proto.Clone(req).(*routeemitterv1.ListRoutesRequest))
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := proto.Clone(f.resp).(*routeemitterv1.ListRoutesResponse)
	out.Routes = nil
	for _, r := range f.resp.GetRoutes() {
		if (req.GetProcessGuid() == "" || r.GetProcessGuid() == req.GetProcessGuid()) &&
			(req.GetHostname() == "" || r.GetHostname() == req.GetHostname()) {
			out.Routes = append(out.Routes, r)
		}
	}
	return out, nil
}

func (f *fakeRouteEmitter) lastRequest(t *testing.T) *routeemitterv1.ListRoutesRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.requests, "the fake route-emitter received no request")
	return f.requests[len(f.requests)-1]
}

func routesFixture() *routeemitterv1.ListRoutesResponse {
	evacuating := modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING
	ordinary := modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY
	return &routeemitterv1.ListRoutesResponse{
		Mode: "global", Active: true, LastEventSequence: 42, LastSyncAt: testNow.Add(-90 * time.Second).UnixNano(),
		RegisterIntervalSeconds: 20, NatsConnected: true,
		Routes: []*routeemitterv1.Route{
			{Hostname: "a.example.com", ProcessGuid: "app-1", ContainerPort: 8080, LogGuid: "log-1", Domain: "cf-apps",
				Endpoints: []*routeemitterv1.RouteEndpoint{
					{InstanceGuid: "ig-0", Index: 0, Host: "10.0.0.1", Port: 61001, Presence: ordinary, Since: testNow.UnixNano()},
					{InstanceGuid: "ig-1", Index: 1, Host: "10.0.0.2", Port: 61002, TlsPort: 61003, Presence: evacuating},
				}},
			{Hostname: "b.example.com", ProcessGuid: "app-2", ContainerPort: 5050},
		},
	}
}

func TestRoutes(t *testing.T) {
	ft := startFakeBBS(t, nil)
	re := &fakeRouteEmitter{resp: routesFixture()}
	addr := startFakeRouteEmitter(t, ft.pki, re)

	res := run(t, ft.env, "routes", "--route-emitter", addr)
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, [][]string{
		{"mode:", "global", "active:", "yes", "last", "sync:", "2026-11-22T11:58:30Z", "(1m30s", "ago)", "last", "event:", "42",
			"register", "interval:", "20s", "nats:", "connected"},
		{"HOSTNAME", "PROCESS_GUID", "PORT", "ENDPOINTS"},
		{"a.example.com", "app-1", "8080", "10.0.0.1:61001#0,", "10.0.0.2:61002#1", "tls:61003", "EVACUATING"},
		{"b.example.com", "app-2", "5050", "-"},
	}, rowFields(res.stdout))
	require.True(t, proto.Equal(&routeemitterv1.ListRoutesRequest{}, re.lastRequest(t)))

	res = run(t, ft.env, "routes", "--route-emitter", addr, "--process-guid", "app-1", "--hostname", "a.example.com", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&routeemitterv1.ListRoutesRequest{ProcessGuid: "app-1", Hostname: "a.example.com"}, re.lastRequest(t)))
	require.Len(t, lines(res.stdout), 1)
	require.JSONEq(t, `{"hostname":"a.example.com","process_guid":"app-1","container_port":8080,"log_guid":"log-1","domain":"cf-apps",
		"endpoints":[
		 {"instance_guid":"ig-0","index":0,"host":"10.0.0.1","port":61001,"presence":"ORDINARY","since":"2026-11-22T12:00:00Z"},
		 {"instance_guid":"ig-1","index":1,"host":"10.0.0.2","port":61002,"tls_port":61003,"presence":"EVACUATING"}]}`, res.stdout)

	// The address can come from the environment.
	env := ft.env
	env.Vars = map[string]string{commands.EnvRouteEmitterAddress: addr}
	for k, v := range ft.env.Vars {
		env.Vars[k] = v
	}
	res = run(t, env, "routes", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Len(t, lines(res.stdout), 2)
	var second struct {
		Endpoints []any `json:"endpoints"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines(res.stdout)[1]), &second))
	require.NotNil(t, second.Endpoints, "no endpoints is an empty list, not null")
}

func TestRoutesBeforeAnyRouterAnswered(t *testing.T) {
	ft := startFakeBBS(t, nil)
	re := &fakeRouteEmitter{resp: &routeemitterv1.ListRoutesResponse{Mode: "local", CellId: "cell-1"}}
	addr := startFakeRouteEmitter(t, ft.pki, re)
	res := run(t, ft.env, "routes", "--route-emitter", addr)
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, [][]string{
		{"mode:", "local", "(cell", "cell-1)", "active:", "no", "last", "sync:", "-", "last", "event:", "0",
			"register", "interval:", "none", "yet", "nats:", "disconnected"},
		{"HOSTNAME", "PROCESS_GUID", "PORT", "ENDPOINTS"},
	}, rowFields(res.stdout))
}

func TestRoutesErrorsNameTheRouteEmitter(t *testing.T) {
	ft := startFakeBBS(t, nil)
	re := &fakeRouteEmitter{err: status.Error(codes.Unavailable, "not the active emitter")}
	addr := startFakeRouteEmitter(t, ft.pki, re)
	res := run(t, ft.env, "routes", "--route-emitter", addr)
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "route-emitter at "+addr+": not the active emitter")

	gone := unreachableAddress(t)
	res = run(t, ft.env, "routes", "--route-emitter", gone, "--timeout", "2s")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "route-emitter at "+gone)
}
