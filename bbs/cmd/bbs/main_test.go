package main

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// bbsServices are the services the BBS registers and reports SERVING.
var bbsServices = []string{
	bbsv1.DesiredLRPService_ServiceDesc.ServiceName,
	bbsv1.ActualLRPService_ServiceDesc.ServiceName,
	bbsv1.TaskService_ServiceDesc.ServiceName,
	bbsv1.DomainService_ServiceDesc.ServiceName,
	bbsv1.CellService_ServiceDesc.ServiceName,
	bbsv1.LockService_ServiceDesc.ServiceName,
	bbsv1.EventService_ServiceDesc.ServiceName,
	bbsv1.ConvergenceService_ServiceDesc.ServiceName,
}

// startupTimeout allows for migrations on a busy 2-core machine.
const startupTimeout = 90 * time.Second

// TestBBSProcess runs one bbs against a fresh database and checks, in order, what an
// operator and a client see, then stops it with SIGTERM.
func TestBBSProcess(t *testing.T) {
	certs := newCertSet(t)
	stranger := newCertSet(t) // another CA with its own client certificate
	cfg := testConfig(t, storetest.NewDatabase(t), certs)
	grpcAddr, httpAddr, debugAddr := cfg["grpc_address"].(string), cfg["http_address"].(string), cfg["debug_address"].(string)
	p := startBBS(t, "-config", writeConfig(t, cfg))

	clientTLS := certs.client(t)
	conn := dial(t, grpcAddr, clientTLS)
	p.waitServing(t, conn, startupTimeout)
	require.Eventually(t, func() bool { return slices.Contains(p.logMessages(), "bbs-started") }, 10*time.Second, 50*time.Millisecond)

	noCert := clientTLS.Clone()
	noCert.Certificates = nil
	foreignCert := stranger.client(t)
	foreignCert.RootCAs = clientTLS.RootCAs // trusts the BBS but presents a foreign certificate
	refused := []struct {
		name   string
		config *tls.Config
	}{
		{name: "without a client certificate", config: noCert},
		{name: "with a certificate from another CA", config: foreignCert},
	}

	t.Run("health is SERVING for every BBS service over mTLS", func(t *testing.T) {
		health := healthpb.NewHealthClient(conn)
		for _, service := range append([]string{""}, bbsServices...) {
			resp, err := health.Check(ctxT(t), &healthpb.HealthCheckRequest{Service: service})
			require.NoError(t, err, service)
			require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus(), service)
		}
	})

	t.Run("reflection lists the drover.bbs.v1 services", func(t *testing.T) {
		stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctxT(t))
		require.NoError(t, err)
		require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
			MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
		}))
		resp, err := stream.Recv()
		require.NoError(t, err)
		var listed []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			listed = append(listed, s.GetName())
		}
		for _, service := range bbsServices {
			require.Contains(t, listed, service)
		}
	})

	t.Run("HTTPS and gRPC reach the same state", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPut, "https://"+httpAddr+"/v1/domains/cf-apps", nil)
		require.NoError(t, err)
		resp, err := httpsClient(clientTLS).Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

		domains, err := bbsv1.NewDomainServiceClient(conn).ListDomains(ctxT(t), &bbsv1.ListDomainsRequest{})
		require.NoError(t, err)
		require.Contains(t, domains.GetDomains(), "cf-apps")
	})

	t.Run("a rep's certificate acts only for its own cell", func(t *testing.T) {
		cellTLS := certs.cell(t, "cell-1")
		cellConn := dial(t, grpcAddr, cellTLS)
		cells := bbsv1.NewCellServiceClient(cellConn)
		presence := func(id string) *bbsv1.HeartbeatCellRequest {
			return &bbsv1.HeartbeatCellRequest{TtlSeconds: 30, CellPresence: &modelsv1.CellPresence{
				CellId: id, RepAddress: "127.0.0.1:1800", Zone: "z1",
				Capacity: &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Containers: 10}}}
		}
		_, err := cells.HeartbeatCell(ctxT(t), presence("cell-1"))
		require.NoError(t, err)
		_, err = cells.HeartbeatCell(ctxT(t), presence("cell-2"))
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
		require.Contains(t, err.Error(), `cell "cell-1" may not act for cell "cell-2"`)
		_, err = bbsv1.NewDomainServiceClient(cellConn).UpsertDomain(ctxT(t), &bbsv1.UpsertDomainRequest{Domain: "d"})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
		_, err = cells.ListCells(ctxT(t), &bbsv1.ListCellsRequest{})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "a cell reads only what concerns it: %v", err)
		listed, err := bbsv1.NewCellServiceClient(conn).ListCells(ctxT(t), &bbsv1.ListCellsRequest{})
		require.NoError(t, err)
		require.Len(t, listed.GetCells(), 1, "the refused heartbeat changed nothing")

		resp, err := httpsClient(cellTLS).Get("https://" + httpAddr + "/v1/cells")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, string(body))
		require.Contains(t, string(body), "may not use the HTTP API")
	})

	for _, tt := range refused {
		t.Run("gRPC refuses a client "+tt.name, func(t *testing.T) {
			_, err := healthpb.NewHealthClient(dial(t, grpcAddr, tt.config)).Check(ctxT(t), &healthpb.HealthCheckRequest{})
			require.Equal(t, codes.Unavailable, status.Code(err), "err: %v", err)
		})
		t.Run("HTTPS refuses a client "+tt.name, func(t *testing.T) {
			resp, err := httpsClient(tt.config).Get("https://" + httpAddr + "/v1/domains")
			if err == nil {
				resp.Body.Close()
			}
			require.Error(t, err)
		})
	}

	t.Run("debug port serves Prometheus metrics including gRPC ones", func(t *testing.T) {
		_, err := bbsv1.NewDomainServiceClient(conn).ListDomains(ctxT(t), &bbsv1.ListDomainsRequest{})
		require.NoError(t, err)
		metrics := get(t, "http://"+debugAddr+"/metrics", http.StatusOK)
		for _, want := range []string{
			`grpc_server_handled_total{grpc_code="OK",grpc_method="ListDomains",grpc_service="drover.bbs.v1.DomainService",grpc_type="unary"}`,
			`grpc_server_handling_seconds_bucket{grpc_method="ListDomains"`,
			`grpc_server_started_total{grpc_method="DesireLRP",grpc_service="drover.bbs.v1.DesiredLRPService"`,
			"go_goroutines",
			"process_resident_memory_bytes",
		} {
			require.Contains(t, metrics, want)
		}
		require.Equal(t, "ok\n", get(t, "http://"+debugAddr+"/healthz", http.StatusOK))
		require.Equal(t, "debug\n", get(t, "http://"+debugAddr+"/log-level", http.StatusOK))
	})

	t.Run("SIGTERM stops it cleanly and quickly", func(t *testing.T) {
		p.Signal(t, syscall.SIGTERM)
		require.Equal(t, 0, p.WaitExit(t, 10*time.Second))
		messages := p.logMessages()
		for _, want := range []string{"grpc-server-stopping", "bbs-exited"} {
			require.Contains(t, messages, want)
		}
	})
}

// TestFatalErrorsExitNonZero checks that start-up failures end the process with a
// non-zero code and a kebab-case log line that says what is wrong.
func TestFatalErrorsExitNonZero(t *testing.T) {
	certs := newCertSet(t)
	unreachable := "postgres://drover@127.0.0.1:1/drover?sslmode=disable&connect_timeout=5"
	with := func(field string, value any) map[string]any {
		cfg := testConfig(t, unreachable, certs)
		if value == nil {
			delete(cfg, field)
		} else {
			cfg[field] = value
		}
		return cfg
	}
	tests := []struct {
		name    string
		args    func() []string
		message string
		detail  string
	}{
		{name: "missing database_url", args: configArgs(t, with("database_url", nil)), message: "invalid-config", detail: "database_url"},
		{name: "unknown field", args: configArgs(t, with("grpc_port", 8889)), message: "invalid-config", detail: "grpc_port"},
		{name: "active key not configured", args: configArgs(t, with("active_key_label", "k2")), message: "invalid-config", detail: "active_key_label"},
		{name: "bad log level", args: configArgs(t, with("log_level", "loud")), message: "invalid-config", detail: "log_level"},
		{name: "missing certificate file", args: configArgs(t, with("tls", map[string]string{"ca_file": "/nonexistent/ca.crt", "cert_file": "c", "key_file": "k"})), message: "failed-to-initialize", detail: "ca_file"},
		{name: "config file missing", args: func() []string { return []string{"-config", "/nonexistent/bbs.json"} }, message: "invalid-config", detail: "no such file"},
		{name: "no -config flag", args: func() []string { return nil }, message: "missing-config-flag", detail: "-config"},
		{name: "database unreachable", args: configArgs(t, with("database_url", unreachable)), message: "bbs-failed-to-start", detail: "migrations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startBBS(t, tt.args()...)
			require.NotEqual(t, 0, p.WaitExit(t, 60*time.Second))
			require.Contains(t, p.logMessages(), tt.message)
			require.Contains(t, p.Output(), tt.detail)
		})
	}
}

// TestTakenPortExitsNonZero fails after migrations, when the gRPC member cannot listen:
// the members already started are stopped and the process exits non-zero.
func TestTakenPortExitsNonZero(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	cfg := testConfig(t, storetest.NewDatabase(t), newCertSet(t))
	cfg["grpc_address"] = taken.Addr().String()

	p := startBBS(t, "-config", writeConfig(t, cfg))
	require.NotEqual(t, 0, p.WaitExit(t, startupTimeout))
	messages := p.logMessages()
	require.Contains(t, messages, "migrations-finished")
	require.Contains(t, messages, "grpc-server-failed-to-listen")
	require.Contains(t, messages, "bbs-failed-to-start")
	require.NotContains(t, messages, "bbs-started")
}

func configArgs(t *testing.T, cfg map[string]any) func() []string {
	return func() []string { return []string{"-config", writeConfig(t, cfg)} }
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func get(t *testing.T, url string, wantStatus int) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, wantStatus, resp.StatusCode, string(body))
	return string(body)
}
