// Package client dials cells' reps (drover.rep.v1) for the BBS, the auctioneer and
// droverctl. A Pool keeps one connection per rep address and closes the connections
// nobody has used for a while, so that those of departed cells do not pile up. It links
// only gRPC and the generated API, none of the rep's own packages.
package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// DefaultIdleTimeout is how long a rep connection lives without calls (Options.IdleTimeout).
const DefaultIdleTimeout = 5 * time.Minute

// ErrClosed is returned by For after Close.
var ErrClosed = errors.New("rep client pool is closed")

// Options tune a Pool. The zero value takes the defaults.
type Options struct {
	// IdleTimeout: a connection with no call for this long releases its socket (gRPC's
	// idle mode), and is closed and forgotten once For has not handed it out for this
	// long either (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// DialOptions are added to every connection's, after the transport credentials.
	DialOptions []grpc.DialOption
}

// Pool hands out clients of cells' reps, one shared connection per rep address, dialled
// with mutual TLS. It is safe for concurrent use. Ask For a client before each use
// rather than keeping one: a connection idle for Options.IdleTimeout may be closed.
type Pool struct {
	creds       credentials.TransportCredentials
	idleTimeout time.Duration
	dialOptions []grpc.DialOption

	mu        sync.Mutex
	conns     map[string]*conn
	lastSweep time.Time
	closed    bool
}

// conn is one cached connection.
type conn struct {
	cc     *grpc.ClientConn
	client repv1.RepServiceClient
	// handedOut is when For last returned this connection's client.
	handedOut time.Time
}

// NewPool makes a pool that dials reps with tlsConfig (nil: plaintext, for tests).
func NewPool(tlsConfig *tls.Config, opts Options) *Pool {
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	return &Pool{
		creds:       creds,
		idleTimeout: opts.IdleTimeout,
		dialOptions: opts.DialOptions,
		conns:       map[string]*conn{},
		lastSweep:   time.Now(),
	}
}

// For returns a client of the rep of cell, at its rep_address. The connection is made
// lazily, by the first call. At most once per idle timeout it also closes the idle
// connections (see Options.IdleTimeout).
func (p *Pool) For(cell *modelsv1.CellPresence) (repv1.RepServiceClient, error) {
	if cell == nil {
		return nil, errors.New("no cell to dial the rep of")
	}
	addr := cell.GetRepAddress()
	if addr == "" {
		return nil, fmt.Errorf("cell %s has no rep address", cell.GetCellId())
	}
	client, idle, err := p.get(cell.GetCellId(), addr)
	closeAll(idle)
	return client, err
}

// get returns the client for addr, dialling it if needed, and takes the idle
// connections out of the pool when a sweep is due (the caller closes them).
func (p *Pool) get(cellID, addr string) (repv1.RepServiceClient, []*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil, ErrClosed
	}
	now := time.Now()
	var idle []*grpc.ClientConn
	if now.Sub(p.lastSweep) >= p.idleTimeout {
		idle = p.takeIdle(now)
		p.lastSweep = now
	}
	c, ok := p.conns[addr]
	if !ok {
		opts := append([]grpc.DialOption{
			grpc.WithTransportCredentials(p.creds),
			grpc.WithIdleTimeout(p.idleTimeout),
		}, p.dialOptions...)
		cc, err := grpc.NewClient(addr, opts...)
		if err != nil {
			return nil, idle, fmt.Errorf("rep of cell %s at %s: %w", cellID, addr, err)
		}
		c = &conn{cc: cc, client: repv1.NewRepServiceClient(cc)}
		p.conns[addr] = c
	}
	c.handedOut = now
	return c.client, idle, nil
}

// takeIdle removes and returns the connections that gRPC has put in idle mode (no call
// in flight or started for the idle timeout) and that For has not handed out within
// the idle timeout, so that a client just handed out is never closed under its caller.
func (p *Pool) takeIdle(now time.Time) []*grpc.ClientConn {
	var idle []*grpc.ClientConn
	for addr, c := range p.conns {
		if now.Sub(c.handedOut) >= p.idleTimeout && c.cc.GetState() == connectivity.Idle {
			idle = append(idle, c.cc)
			delete(p.conns, addr)
		}
	}
	return idle
}

// Close closes every connection, ending the calls in flight; For fails afterwards.
func (p *Pool) Close() error {
	p.mu.Lock()
	conns := make([]*grpc.ClientConn, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c.cc)
	}
	p.conns, p.closed = map[string]*conn{}, true
	p.mu.Unlock()
	return closeAll(conns)
}

// closeAll closes conns.
func closeAll(conns []*grpc.ClientConn) error {
	var errs []error
	for _, cc := range conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}
