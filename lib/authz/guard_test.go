package authz_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"drover.dev/lib/authz"
	"drover.dev/lib/authz/authztest"
	"drover.dev/lib/grpcserver"
)

// echoHealth answers Check and Watch with SERVING and records the identity the guard
// handed to the handler.
type echoHealth struct {
	healthpb.UnimplementedHealthServer
	seen chan authz.Identity
}

func (h *echoHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	id, _ := authz.FromContext(ctx)
	h.seen <- id
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *echoHealth) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	id, _ := authz.FromContext(stream.Context())
	h.seen <- id
	return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

// testPolicy: Check for operators and cells, a cell only for service "" or its own
// cell id; Watch for operators; List has no rule.
func testPolicy() authz.Policy {
	ownService := func(id authz.Identity, req any) error {
		if s := req.(*healthpb.HealthCheckRequest).GetService(); id.Role == authz.RoleCell && s != "" && s != id.Cell {
			return status.Errorf(codes.PermissionDenied, "%s may not ask about %q", id, s)
		}
		return nil
	}
	return authz.Policy{
		healthpb.Health_Check_FullMethodName: {Roles: []authz.Role{authz.RoleOperator, authz.RoleCell}, Check: ownService},
		healthpb.Health_Watch_FullMethodName: {Roles: []authz.Role{authz.RoleOperator}, Check: ownService},
	}
}

// serveGuarded serves echoHealth behind guard on a loopback port (TLS when serverTLS is set).
func serveGuarded(t *testing.T, guard *authz.Guard, serverTLS *tls.Config) (string, *echoHealth) {
	t.Helper()
	creds := insecure.NewCredentials()
	if serverTLS != nil {
		creds = credentials.NewTLS(serverTLS)
	}
	srv := grpc.NewServer(grpc.Creds(creds),
		grpc.UnaryInterceptor(guard.UnaryInterceptor()), grpc.StreamInterceptor(guard.StreamInterceptor()))
	h := &echoHealth{seen: make(chan authz.Identity, 10)}
	healthpb.RegisterHealthServer(srv, h)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), h
}

func healthClient(t *testing.T, addr string, clientTLS *tls.Config) healthpb.HealthClient {
	t.Helper()
	creds := insecure.NewCredentials()
	if clientTLS != nil {
		creds = credentials.NewTLS(clientTLS)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestGuardOverMTLS(t *testing.T) {
	ca := authztest.NewCA(t)
	registry := prometheus.NewRegistry()
	guard, err := authz.NewGuard(authz.GuardOptions{Names: authz.DefaultNames(), Policy: testPolicy(), Registerer: registry})
	require.NoError(t, err)
	addr, h := serveGuarded(t, guard, ca.Server("server"))

	for _, tc := range []struct {
		name, cn, service, method string
		want                      codes.Code
		message                   string
		seen                      authz.Identity
	}{
		{name: "operator checks", cn: "drover-client", method: "Check", want: codes.OK,
			seen: authz.Identity{Role: authz.RoleOperator, CommonName: "drover-client"}},
		{name: "a cell checks its own", cn: "cell:cell-1", service: "cell-1", method: "Check", want: codes.OK,
			seen: authz.Identity{Role: authz.RoleCell, Cell: "cell-1", CommonName: "cell:cell-1"}},
		{name: "a cell's request for another is refused by the check", cn: "cell:cell-1", service: "cell-2", method: "Check",
			want: codes.PermissionDenied, message: `cell "cell-1" may not ask about "cell-2"`},
		{name: "a role the rule does not admit", cn: "route-emitter", method: "Check", want: codes.PermissionDenied,
			message: `route-emitter "route-emitter" may not call /grpc.health.v1.Health/Check: role not allowed`},
		{name: "a cell with an empty id", cn: "cell:", method: "Check", want: codes.PermissionDenied,
			message: `unknown certificate "cell:" may not call /grpc.health.v1.Health/Check: certificate "cell:" names no cell`},
		{name: "a common name without a role", cn: "stranger", method: "Check", want: codes.PermissionDenied,
			message: `certificate "stranger" has no role`},
		{name: "a method without a rule", cn: "drover-client", method: "List", want: codes.PermissionDenied,
			message: "/grpc.health.v1.Health/List: the method has no authorisation rule"},
		{name: "operator watches", cn: "drover-client", method: "Watch", want: codes.OK,
			seen: authz.Identity{Role: authz.RoleOperator, CommonName: "drover-client"}},
		{name: "a cell may not watch", cn: "cell:cell-1", method: "Watch", want: codes.PermissionDenied,
			message: `cell "cell-1" may not call /grpc.health.v1.Health/Watch`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := healthClient(t, addr, ca.Client(tc.cn))
			req := &healthpb.HealthCheckRequest{Service: tc.service}
			var err error
			switch tc.method {
			case "Check":
				_, err = client.Check(ctxT(t), req)
			case "List":
				_, err = client.List(ctxT(t), &healthpb.HealthListRequest{})
			case "Watch":
				var stream grpc.ServerStreamingClient[healthpb.HealthCheckResponse]
				if stream, err = client.Watch(ctxT(t), req); err == nil {
					_, err = stream.Recv()
				}
			}
			require.Equal(t, tc.want, status.Code(err), "%v", err)
			if tc.want != codes.OK {
				require.ErrorContains(t, err, tc.message)
				return
			}
			require.Equal(t, tc.seen, <-h.seen, "the handler sees the admitted identity")
		})
	}

	t.Run("refusals are counted by method and role", func(t *testing.T) {
		families, err := registry.Gather()
		require.NoError(t, err)
		counts := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "drover_authz_denied_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				counts[labels["method"]+" "+labels["role"]] += m.GetCounter().GetValue()
			}
		}
		require.Equal(t, float64(1), counts["/grpc.health.v1.Health/Check route-emitter"])
		require.Equal(t, float64(2), counts["/grpc.health.v1.Health/Check "], "the empty cell and the stranger")
		require.Equal(t, float64(1), counts["/grpc.health.v1.Health/Check cell"], "the check's refusal")
		require.Equal(t, float64(1), counts["/grpc.health.v1.Health/Watch cell"])
	})
}

func TestGuardWithoutTLS(t *testing.T) {
	guard, err := authz.NewGuard(authz.GuardOptions{Names: authz.DefaultNames(), Policy: testPolicy()})
	require.NoError(t, err)

	t.Run("plaintext callers are refused by default", func(t *testing.T) {
		addr, _ := serveGuarded(t, guard, nil)
		_, err := healthClient(t, addr, nil).Check(ctxT(t), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
		require.ErrorContains(t, err, "no TLS: a client certificate is required")
	})

	t.Run("a plaintext listener may trust its callers as one identity", func(t *testing.T) {
		addr, h := serveGuarded(t, guard.Plaintext(authz.Identity{Role: authz.RoleOperator}), nil)
		_, err := healthClient(t, addr, nil).Check(ctxT(t), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		require.Equal(t, authz.Identity{Role: authz.RoleOperator}, <-h.seen)
	})
}

func TestCommonPolicyCoversWhatGRPCServerRegisters(t *testing.T) {
	srv, _ := grpcserver.NewServer(nil)
	methods := authz.ServerMethods(srv)
	require.Contains(t, methods, healthpb.Health_Check_FullMethodName)
	require.Empty(t, authz.CommonPolicy().Unruled(methods))
	require.Equal(t, []string{"/x/Unruled"}, authz.CommonPolicy().Unruled(append(methods, "/x/Unruled")))
}

func TestPackageMethods(t *testing.T) {
	require.Equal(t, []string{
		healthpb.Health_Check_FullMethodName,
		healthpb.Health_List_FullMethodName,
		healthpb.Health_Watch_FullMethodName,
	}, authz.PackageMethods("grpc.health.v1"))
	require.Empty(t, authz.PackageMethods("no.such.v1"))
}

func TestPolicyWith(t *testing.T) {
	a := authz.Policy{"/a/A": authz.Allow(authz.RoleOperator)}
	b := authz.Policy{"/a/A": authz.Allow(authz.RoleBBS), "/b/B": authz.Allow(authz.RoleCell)}
	got := a.With(b)
	require.Equal(t, []authz.Role{authz.RoleBBS}, got["/a/A"].Roles)
	require.Len(t, got, 2)
	require.Equal(t, []authz.Role{authz.RoleOperator}, a["/a/A"].Roles, "a is unchanged")
}

func TestComponentGuard(t *testing.T) {
	t.Run("without TLS every caller is an operator", func(t *testing.T) {
		guard, err := authz.ComponentGuard(authz.DefaultNames(), testPolicy(), false, nil, nil)
		require.NoError(t, err)
		addr, h := serveGuarded(t, guard, nil)
		_, err = healthClient(t, addr, nil).Check(ctxT(t), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		require.Equal(t, authz.Identity{Role: authz.RoleOperator}, <-h.seen)
	})
	t.Run("with TLS callers are named by their certificates", func(t *testing.T) {
		ca := authztest.NewCA(t)
		guard, err := authz.ComponentGuard(authz.DefaultNames(), testPolicy(), true, prometheus.NewRegistry(), nil)
		require.NoError(t, err)
		addr, _ := serveGuarded(t, guard, ca.Server("server"))
		_, err = healthClient(t, addr, ca.Client("route-emitter")).Check(ctxT(t), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	})
}
