// Package grpcserver builds drover's gRPC servers (mTLS, grpc.health.v1, reflection,
// sensible limits and keepalive) and runs them as ifrit members that stop gracefully.
package grpcserver

import (
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
)

// MaxRecvMsgBytes is the largest request message a server accepts.
const MaxRecvMsgBytes = 16 << 20

// Keepalive settings: the server pings idle connections to find dead peers, and refuses
// clients that ping more often than every KeepaliveMinClientInterval.
const (
	KeepaliveTime              = 30 * time.Second
	KeepaliveTimeout           = 10 * time.Second
	KeepaliveMinClientInterval = 10 * time.Second
)

// NewServer returns a gRPC server with TLS credentials from tlsConfig (nil means
// plaintext, for in-process links and tests), a 16 MiB receive limit, keepalive
// enforcement, server reflection, and a grpc.health.v1 service whose overall status ("")
// starts NOT_SERVING. opts come after the defaults and may override them.
func NewServer(tlsConfig *tls.Config, opts ...grpc.ServerOption) (*grpc.Server, *health.Server) {
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	defaults := []grpc.ServerOption{
		grpc.Creds(creds),
		grpc.MaxRecvMsgSize(MaxRecvMsgBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             KeepaliveMinClientInterval,
			PermitWithoutStream: true,
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:    KeepaliveTime,
			Timeout: KeepaliveTimeout,
		}),
	}
	srv := grpc.NewServer(append(defaults, opts...)...)
	healthServer := health.NewServer()
	healthServer.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, healthServer)
	reflection.Register(srv)
	return srv, healthServer
}

// SetServing marks the overall status ("") and every service registered on srv as
// SERVING. Call it once the process is really ready, after registering its services.
func SetServing(healthServer *health.Server, srv *grpc.Server) {
	if healthServer == nil {
		return
	}
	healthServer.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if srv == nil {
		return
	}
	for name := range srv.GetServiceInfo() {
		healthServer.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
}
