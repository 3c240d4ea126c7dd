package devstack

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	bbsconfig "drover.dev/bbs/config"
)

// Timeouts of a BBS's life.
const (
	// StartTimeout bounds the wait for a new BBS to become healthy (it migrates first).
	StartTimeout = 90 * time.Second
	// healthAttemptTimeout bounds one health check.
	healthAttemptTimeout = 2 * time.Second
)

// BBS is one BBS process of a stack: a Service with the BBS's configuration.
type BBS struct {
	Service
	Config bbsconfig.Config `json:"config"`
	Certs  Certs            `json:"certs"`
}

// GRPCAddress is host:port of the BBS's gRPC server.
func (b *BBS) GRPCAddress() string { return b.Config.GRPCAddress }

// HTTPURL is the base URL of the BBS's HTTPS API.
func (b *BBS) HTTPURL() string { return "https://" + b.Config.HTTPAddress }

// DebugURL is the base URL of the BBS's debug server (/metrics, /healthz).
func (b *BBS) DebugURL() string { return "http://" + b.Config.DebugAddress }

// Start writes the configuration, starts the BBS and waits until it is Healthy (at most
// StartTimeout, or ctx's deadline).
func (b *BBS) Start(ctx context.Context) error {
	return b.start(ctx, b.Config, StartTimeout, b.Healthy)
}

// Restart stops the BBS if it runs and starts it again with the same configuration.
func (b *BBS) Restart(ctx context.Context) error {
	if err := b.Stop(ctx); err != nil {
		return err
	}
	return b.Start(ctx)
}

// Healthy reports whether the BBS is ready: its gRPC health check answers SERVING and
// its debug server, the last part it starts (after HTTPS), answers /healthz.
func (b *BBS) Healthy(ctx context.Context) error {
	tlsConf, err := b.Certs.ClientTLS()
	if err != nil {
		return err
	}
	if err := checkHealth(ctx, b.GRPCAddress(), tlsConf); err != nil {
		return err
	}
	return checkHTTP(ctx, b.DebugURL()+"/healthz")
}

// checkHealth asks address's grpc.health.v1 service for the server's overall status.
func checkHealth(ctx context.Context, address string, tlsConf *tls.Config) error {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, healthAttemptTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health status %s", resp.GetStatus())
	}
	return nil
}

// checkHTTP requires a 200 answer from a plain HTTP GET of url.
func checkHTTP(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, healthAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
