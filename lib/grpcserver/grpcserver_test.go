package grpcserver

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
)

// certs writes dev certificates and returns the server and client TLS configurations.
func certs(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	path := func(name string) string { return filepath.Join(dir, name) }
	server, err := tlsconfig.Files{CAFile: path("ca.crt"), CertFile: path("bbs.crt"), KeyFile: path("bbs.key")}.Server()
	require.NoError(t, err)
	client, err = tlsconfig.Files{CAFile: path("ca.crt"), CertFile: path("client.crt"), KeyFile: path("client.key")}.Client()
	require.NoError(t, err)
	return server, client
}

// start runs srv on a fresh loopback port and returns the process and its address.
func start(t *testing.T, srv *grpc.Server, hs *health.Server, opts ...Option) (ifrit.Process, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	process := ifrit.Invoke(FromListener(lis, srv, hs, nil, opts...))
	t.Cleanup(func() {
		process.Signal(os.Kill)
		<-process.Wait()
	})
	return process, lis.Addr().String()
}

func dial(t *testing.T, addr string, tlsConfig *tls.Config) *grpc.ClientConn {
	t.Helper()
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func checkHealth(t *testing.T, conn *grpc.ClientConn, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}

func TestHealthStartsNotServingAndFollowsSetServing(t *testing.T) {
	serverTLS, clientTLS := certs(t)
	srv, hs := NewServer(serverTLS)
	_, addr := start(t, srv, hs)
	conn := dial(t, addr, clientTLS)

	got, err := checkHealth(t, conn, "")
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, got)

	SetServing(hs, srv)
	for _, service := range []string{"", healthpb.Health_ServiceDesc.ServiceName} {
		got, err := checkHealth(t, conn, service)
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, got, service)
	}
	SetServing(nil, srv) // no panic
}

func TestMutualTLSIsRequired(t *testing.T) {
	serverTLS, clientTLS := certs(t)
	_, strangerTLS := certs(t) // a client certificate from another CA
	srv, hs := NewServer(serverTLS)
	_, addr := start(t, srv, hs)

	noCert := clientTLS.Clone()
	noCert.Certificates = nil
	stranger := strangerTLS.Clone()
	stranger.RootCAs = clientTLS.RootCAs // trusts the server, but presents a foreign cert

	tests := []struct {
		name   string
		config *tls.Config
	}{
		{name: "no client certificate", config: noCert},
		{name: "certificate from another CA", config: stranger},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkHealth(t, dial(t, addr, tt.config), "")
			require.Equal(t, codes.Unavailable, status.Code(err), "err: %v", err)
		})
	}
}

func TestReflectionListsServices(t *testing.T) {
	srv, hs := NewServer(nil)
	_, addr := start(t, srv, hs)
	conn := dial(t, addr, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	require.Contains(t, names, "grpc.health.v1.Health")
	require.Contains(t, names, "grpc.reflection.v1.ServerReflection")
}

func TestReceiveLimit(t *testing.T) {
	srv, hs := NewServer(nil)
	_, addr := start(t, srv, hs)
	_, err := checkHealth(t, dial(t, addr, nil), strings.Repeat("x", MaxRecvMsgBytes+1))
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "err: %v", err)
}

func TestSignalSetsNotServingAndStopsGracefully(t *testing.T) {
	srv, hs := NewServer(nil)
	SetServing(hs, srv)
	process, addr := start(t, srv, hs, WithGracePeriod(time.Minute))
	conn := dial(t, addr, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	resp, err := watch.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())

	process.Signal(os.Interrupt)
	resp, err = watch.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, resp.GetStatus())
	cancel() // the last open stream ends, so GracefulStop can finish well inside its minute

	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop after its last stream ended")
	}
}

func TestGracePeriodBoundsOpenStreams(t *testing.T) {
	srv, hs := NewServer(nil)
	process, addr := start(t, srv, hs, WithGracePeriod(200*time.Millisecond))
	conn := dial(t, addr, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.NoError(t, err)

	stopped := time.Now()
	process.Signal(os.Interrupt)
	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("an open stream held the server past its grace period")
	}
	require.GreaterOrEqual(t, time.Since(stopped), 200*time.Millisecond, "waited for the grace period")
}

func TestNewListensOnAddressAndFailsWhenTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	srv, hs := NewServer(nil)
	process := ifrit.Background(New(taken.Addr().String(), srv, hs, nil))
	select {
	case err := <-process.Wait():
		require.ErrorContains(t, err, "listen")
	case <-process.Ready():
		t.Fatal("ready although the address is taken")
	case <-time.After(10 * time.Second):
		t.Fatal("runner neither failed nor became ready")
	}

	free := taken.Addr().String()
	require.NoError(t, taken.Close())
	srv2, hs2 := NewServer(nil)
	process = ifrit.Invoke(New(free, srv2, hs2, nil))
	t.Cleanup(func() { process.Signal(os.Kill); <-process.Wait() })
	_, err = checkHealth(t, dial(t, free, nil), "")
	require.NoError(t, err, "serving once ready")
}

func TestFromNilListenerFails(t *testing.T) {
	srv, hs := NewServer(nil)
	err := <-ifrit.Background(FromListener(nil, srv, hs, nil)).Wait()
	require.Error(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	err = <-ifrit.Background(FromListener(lis, nil, hs, nil)).Wait()
	require.Error(t, err)
}

func TestMetricsCountCallsByMethodAndCode(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	require.NoError(t, err)
	_, err = NewMetrics(reg)
	require.Error(t, err, "registering twice is refused")
	_, err = NewMetrics(nil)
	require.Error(t, err)

	srv, hs := NewServer(nil, metrics.ServerOptions()...)
	metrics.Initialize(srv)
	require.Equal(t, 0.0, handled(t, reg, "Check", "OK"), "series exist before the first call")

	_, addr := start(t, srv, hs)
	conn := dial(t, addr, nil)
	_, err = checkHealth(t, conn, "")
	require.NoError(t, err)
	_, err = checkHealth(t, conn, "no.such.Service")
	require.Equal(t, codes.NotFound, status.Code(err))

	require.Equal(t, 1.0, handled(t, reg, "Check", "OK"))
	require.Equal(t, 1.0, handled(t, reg, "Check", "NotFound"))
}

// handled reads grpc_server_handled_total for a grpc.health.v1.Health method and code.
func handled(t *testing.T, reg *prometheus.Registry, method, code string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, family := range families {
		if family.GetName() != "grpc_server_handled_total" {
			continue
		}
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, pair := range metric.GetLabel() {
				labels[pair.GetName()] = pair.GetValue()
			}
			if labels["grpc_service"] == "grpc.health.v1.Health" && labels["grpc_method"] == method && labels["grpc_code"] == code {
				return metric.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no grpc_server_handled_total series for %s %s", method, code)
	return 0
}
