package devstack

import (
	"context"
	"time"

	auctioneerconfig "drover.dev/auctioneer/config"
	repconfig "drover.dev/rep/config"
)

// ComponentStartTimeout bounds the wait for the auctioneer or a rep to become healthy.
const ComponentStartTimeout = 60 * time.Second

// The binaries of the cell side.
var (
	AuctioneerBinary = Binary{Name: "auctioneer", Package: "./auctioneer/cmd/auctioneer"}
	RepBinary        = Binary{Name: "rep", Package: "./rep/cmd/rep"}
)

// Auctioneer is the auction service of a stack: a Service with its configuration.
type Auctioneer struct {
	Service
	Config auctioneerconfig.Config `json:"config"`
	Certs  Certs                   `json:"certs"`
}

// Address is host:port of the auctioneer's gRPC server.
func (a *Auctioneer) Address() string { return a.Config.ListenAddress }

// DebugURL is the base URL of the auctioneer's debug server.
func (a *Auctioneer) DebugURL() string { return "http://" + a.Config.DebugAddress }

// Start writes the configuration, starts the auctioneer and waits until it is Healthy,
// which it is once it holds the auctioneer lock.
func (a *Auctioneer) Start(ctx context.Context) error {
	return a.start(ctx, a.Config, ComponentStartTimeout, a.Healthy)
}

// Restart stops the auctioneer if it runs and starts it again.
func (a *Auctioneer) Restart(ctx context.Context) error {
	if err := a.Stop(ctx); err != nil {
		return err
	}
	return a.Start(ctx)
}

// Healthy reports whether the auctioneer's gRPC health check answers SERVING.
func (a *Auctioneer) Healthy(ctx context.Context) error {
	tlsConf, err := a.Certs.ClientTLS()
	if err != nil {
		return err
	}
	return checkHealth(ctx, a.Address(), tlsConf)
}

// Rep is one cell's agent: a Service with its configuration and the cell's host
// resources (containerd namespace, bridge, subnet) that Down cleans up.
type Rep struct {
	Service
	Config repconfig.Config `json:"config"`
	Certs  Certs            `json:"certs"`
}

// CellID is the rep's cell id.
func (r *Rep) CellID() string { return r.Config.CellID }

// Address is host:port of the rep's gRPC server.
func (r *Rep) Address() string { return r.Config.ListenAddress }

// DebugURL is the base URL of the rep's debug server (/metrics).
func (r *Rep) DebugURL() string { return "http://" + r.Config.DebugAddress }

// Start writes the configuration, starts the rep and waits until it is Healthy.
func (r *Rep) Start(ctx context.Context) error {
	return r.start(ctx, r.Config, ComponentStartTimeout, r.Healthy)
}

// Restart stops the rep if it runs (SIGTERM) and starts it again.
func (r *Rep) Restart(ctx context.Context) error {
	if err := r.Stop(ctx); err != nil {
		return err
	}
	return r.Start(ctx)
}

// Healthy reports whether the rep's gRPC health check answers SERVING.
func (r *Rep) Healthy(ctx context.Context) error {
	tlsConf, err := r.Certs.ClientTLS()
	if err != nil {
		return err
	}
	return checkHealth(ctx, r.Address(), tlsConf)
}
