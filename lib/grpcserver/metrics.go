package grpcserver

import (
	"fmt"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// Metrics records RPC metrics on a Prometheus registry: grpc_server_started_total,
// grpc_server_handled_total (by method and code), message counters and the
// grpc_server_handling_seconds histogram.
type Metrics struct {
	server *grpcprom.ServerMetrics
}

// NewMetrics creates the RPC metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("grpc metrics: nil registerer")
	}
	server := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	if err := reg.Register(server); err != nil {
		return nil, fmt.Errorf("register grpc metrics: %w", err)
	}
	return &Metrics{server: server}, nil
}

// UnaryInterceptor records unary RPCs.
func (m *Metrics) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return m.server.UnaryServerInterceptor()
}

// StreamInterceptor records streaming RPCs.
func (m *Metrics) StreamInterceptor() grpc.StreamServerInterceptor {
	return m.server.StreamServerInterceptor()
}

// ServerOptions chains both interceptors; put them before other interceptors so that
// they see the final status code.
func (m *Metrics) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.UnaryInterceptor()),
		grpc.ChainStreamInterceptor(m.StreamInterceptor()),
	}
}

// Initialize creates zero-valued series for every method registered on srv, so that
// dashboards see them before the first call.
func (m *Metrics) Initialize(srv *grpc.Server) {
	if srv != nil {
		m.server.InitializeMetrics(srv)
	}
}
