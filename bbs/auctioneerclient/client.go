// Package auctioneerclient sends the BBS's auction requests to the auctioneer that holds
// the "auctioneer" lock, whose value is that auctioneer's gRPC address, as Diego's BBS
// does; a configured address is the fallback while no lock holder has a usable address.
package auctioneerclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// LockKey is the lock the active auctioneer holds (the auctioneer's config.LockKey).
const LockKey = "auctioneer"

// DefaultRefreshInterval is how often the lock is read again while calls succeed.
const DefaultRefreshInterval = 5 * time.Second

// LockFetcher reads a held lock; a free or expired one is models.ErrResourceNotFound.
type LockFetcher interface {
	FetchLock(ctx context.Context, key string) (*modelsv1.Lock, error)
}

// Options configure a Client.
type Options struct {
	// Fallback is the address used while no lock holder has a usable address.
	Fallback string
	// RefreshInterval bounds how long a read of the lock is trusted (default
	// DefaultRefreshInterval); a failed call makes the next call read it again.
	RefreshInterval time.Duration
	// DialOptions are the options of every connection (e.g. the TLS credentials).
	DialOptions []grpc.DialOption
	Logger      *slog.Logger
}

// Client is an AuctioneerServiceClient that sends each call to the current lock holder.
// It keeps one connection, to the address last resolved, and closes it when the
// address changes.
type Client struct {
	locks LockFetcher
	opts  Options

	mu      sync.Mutex
	address string
	conn    *grpc.ClientConn
	readAt  time.Time // when the lock was last read; zero means read it on the next call
}

var _ auctioneerv1.AuctioneerServiceClient = (*Client)(nil)

// New makes a Client that reads the lock from locks; it dials nothing until a call.
func New(locks LockFetcher, opts Options) *Client {
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{locks: locks, opts: opts}
}

// RequestLRPAuctions sends the request to the current auctioneer.
func (c *Client) RequestLRPAuctions(ctx context.Context, in *auctioneerv1.RequestLRPAuctionsRequest, opts ...grpc.CallOption) (*auctioneerv1.RequestLRPAuctionsResponse, error) {
	return call(c, ctx, func(a auctioneerv1.AuctioneerServiceClient) (*auctioneerv1.RequestLRPAuctionsResponse, error) {
		return a.RequestLRPAuctions(ctx, in, opts...)
	})
}

// RequestTaskAuctions sends the request to the current auctioneer.
func (c *Client) RequestTaskAuctions(ctx context.Context, in *auctioneerv1.RequestTaskAuctionsRequest, opts ...grpc.CallOption) (*auctioneerv1.RequestTaskAuctionsResponse, error) {
	return call(c, ctx, func(a auctioneerv1.AuctioneerServiceClient) (*auctioneerv1.RequestTaskAuctionsResponse, error) {
		return a.RequestTaskAuctions(ctx, in, opts...)
	})
}

// Close closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.address = ""
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// call sends one request; after a failure it reads the lock again, and when an
// UNAVAILABLE auctioneer (down, or a standby) has been replaced it retries once at the
// new holder.
func call[T any](c *Client, ctx context.Context, send func(auctioneerv1.AuctioneerServiceClient) (T, error)) (T, error) {
	conn, err := c.current(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	resp, err := send(auctioneerv1.NewAuctioneerServiceClient(conn))
	if err == nil {
		return resp, nil
	}
	c.invalidate()
	if status.Code(err) != codes.Unavailable {
		return resp, err
	}
	next, nextErr := c.current(ctx)
	if nextErr != nil || next == conn {
		return resp, err
	}
	return send(auctioneerv1.NewAuctioneerServiceClient(next))
}

// invalidate makes the next call read the lock again.
func (c *Client) invalidate() {
	c.mu.Lock()
	c.readAt = time.Time{}
	c.mu.Unlock()
}

// current returns the connection to the current auctioneer, reading the lock when the
// last read is older than the refresh interval or a call failed since.
func (c *Client) current(ctx context.Context) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && time.Since(c.readAt) < c.opts.RefreshInterval {
		return c.conn, nil
	}
	address := c.resolve(ctx)
	c.readAt = time.Now()
	if c.conn != nil && address == c.address {
		return c.conn, nil
	}
	if address == "" {
		return nil, status.Error(codes.Unavailable, "no auctioneer: the auctioneer lock is free and no fallback address is configured")
	}
	conn, err := grpc.NewClient(address, c.opts.DialOptions...)
	if err != nil {
		return nil, fmt.Errorf("auctioneer client for %s: %w", address, err)
	}
	c.opts.Logger.Info("auctioneer-address-changed", "from", c.address, "to", address)
	if c.conn != nil {
		_ = c.conn.Close()
	}
	c.address, c.conn = address, conn
	return conn, nil
}

// resolve is the lock holder's address when it is usable, else the fallback; when the
// lock cannot be read it keeps the address in use.
func (c *Client) resolve(ctx context.Context) string {
	lock, err := c.locks.FetchLock(ctx, LockKey)
	switch {
	case errors.Is(err, models.ErrResourceNotFound):
		return c.opts.Fallback
	case err != nil:
		c.opts.Logger.Error("failed-to-fetch-auctioneer-lock", "error", err.Error())
		if c.address != "" {
			return c.address
		}
		return c.opts.Fallback
	case !Dialable(lock.GetValue()):
		c.opts.Logger.Debug("auctioneer-lock-value-not-dialable", "value", lock.GetValue(), "owner", lock.GetOwner())
		return c.opts.Fallback
	}
	return lock.GetValue()
}

// Dialable reports whether a lock value is an address to dial: host:port with a host
// that is not empty or unspecified (0.0.0.0, ::) and a port in 1..65535.
func Dialable(value string) bool {
	host, port, err := net.SplitHostPort(value)
	if err != nil || host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p > 0 && p <= 65535
}
