package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// RepClientFactory gives a client of the rep of a cell.
type RepClientFactory interface {
	RepClient(cell *modelsv1.CellPresence) (repv1.RepServiceClient, error)
}

// NewRepClientFactory dials reps at their cells' rep_address with mutual TLS (nil
// tlsConfig: plaintext, for tests) and keeps one connection per address.
func NewRepClientFactory(tlsConfig *tls.Config) RepClientFactory {
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	return &repClients{creds: creds, conns: map[string]*grpc.ClientConn{}}
}

// repClients caches one connection per rep address.
type repClients struct {
	creds credentials.TransportCredentials
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// RepClient returns a client of the cell's rep, connecting on first use.
func (r *repClients) RepClient(cell *modelsv1.CellPresence) (repv1.RepServiceClient, error) {
	addr := cell.GetRepAddress()
	if addr == "" {
		return nil, errors.New("cell has no rep address")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if conn, ok := r.conns[addr]; ok {
		return repv1.NewRepServiceClient(conn), nil
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(r.creds))
	if err != nil {
		return nil, fmt.Errorf("rep client %s: %w", addr, err)
	}
	r.conns[addr] = conn
	return repv1.NewRepServiceClient(conn), nil
}

// Close closes every cached connection.
func (r *repClients) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for addr, conn := range r.conns {
		errs = append(errs, conn.Close())
		delete(r.conns, addr)
	}
	return errors.Join(errs...)
}
