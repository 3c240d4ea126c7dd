package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"drover.dev/devstack/devstacktest"
)

// TestGRPCAccess checks what an operator sees with grpcurl and the dev certificates:
// reflection lists the services, health answers SERVING, and nobody gets in without a
// client certificate, over gRPC or HTTPS.
func TestGRPCAccess(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{})
	bbs := s.BBS[0]
	client := s.Certs.Client()
	withCert := []string{"-cacert", client.CAFile, "-cert", client.CertFile, "-key", client.KeyFile}
	run := func(t *testing.T, args ...string) (string, error) {
		grpcurl := grpcurlPath(t)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, grpcurl, args...).CombinedOutput()
		return string(out), err
	}

	t.Run("grpcurl lists the services", func(t *testing.T) {
		out, err := run(t, append(withCert, bbs.GRPCAddress(), "list")...)
		require.NoError(t, err, out)
		for _, service := range []string{
			"drover.bbs.v1.DesiredLRPService", "drover.bbs.v1.ActualLRPService", "drover.bbs.v1.TaskService",
			"drover.bbs.v1.DomainService", "drover.bbs.v1.CellService", "drover.bbs.v1.LockService",
			"drover.bbs.v1.EventService", "grpc.health.v1.Health",
		} {
			require.Contains(t, strings.Fields(out), service)
		}
	})

	t.Run("grpcurl health check answers SERVING", func(t *testing.T) {
		out, err := run(t, append(withCert, bbs.GRPCAddress(), "grpc.health.v1.Health/Check")...)
		require.NoError(t, err, out)
		require.Contains(t, out, `"status": "SERVING"`)
	})

	t.Run("grpcurl calls a service", func(t *testing.T) {
		out, err := run(t, append(withCert, "-d", `{"domain": "via-grpcurl"}`, bbs.GRPCAddress(), "drover.bbs.v1.DomainService/UpsertDomain")...)
		require.NoError(t, err, out)
		out, err = run(t, append(withCert, bbs.GRPCAddress(), "drover.bbs.v1.DomainService/ListDomains")...)
		require.NoError(t, err, out)
		require.Contains(t, out, "via-grpcurl")
	})

	t.Run("grpcurl without a client certificate is refused", func(t *testing.T) {
		out, err := run(t, "-cacert", client.CAFile, bbs.GRPCAddress(), "list")
		require.Error(t, err, out)
	})

	noCert := func(t *testing.T) *tls.Config {
		pem, err := os.ReadFile(client.CAFile)
		require.NoError(t, err)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(pem))
		return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	}

	t.Run("gRPC without a client certificate is refused", func(t *testing.T) {
		conn, err := grpc.NewClient(bbs.GRPCAddress(), grpc.WithTransportCredentials(credentials.NewTLS(noCert(t))))
		require.NoError(t, err)
		defer conn.Close()
		_, err = healthpb.NewHealthClient(conn).Check(callCtx(t), &healthpb.HealthCheckRequest{})
		require.Error(t, err)
	})

	t.Run("HTTPS without a client certificate is refused", func(t *testing.T) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: noCert(t)}, Timeout: 30 * time.Second}
		defer c.CloseIdleConnections()
		resp, err := c.Get(bbs.HTTPURL() + "/v1/domains")
		if err == nil {
			resp.Body.Close()
		}
		require.Error(t, err)
	})

	t.Run("gRPC with the dev client certificate is served", func(t *testing.T) {
		require.NoError(t, bbs.Healthy(callCtx(t)))
	})

	t.Run("the debug server answers /healthz and /metrics", func(t *testing.T) {
		c := &http.Client{Timeout: 30 * time.Second}
		for _, path := range []string{"/healthz", "/metrics"} {
			resp, err := c.Get(bbs.DebugURL() + path)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			require.NotEmpty(t, body, path)
		}
	})
}
