package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"drover.dev/bbs/client"
	"drover.dev/bbs/events"
	"drover.dev/bbs/server"
	"drover.dev/bbs/store"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/grpcserver"
	"drover.dev/lib/tlsconfig"
	repclient "drover.dev/rep/client"
)

// DefaultMaxConns is the store's own default pool size, which the bbs binary uses.
const DefaultMaxConns = store.DefaultMaxConns

// encryptionKeyLabel names the at-rest encryption key of the benchmark store.
const encryptionKeyLabel = "bench"

// StackConfig says how to start an in-process BBS.
type StackConfig struct {
	// AdminURL reaches a Postgres role that may create databases.
	AdminURL string
	// MaxConns sizes the store's connection pool (0: DefaultMaxConns).
	MaxConns int
	// Logger receives the BBS logs (nil: discarded).
	Logger *slog.Logger
}

// Stack is a BBS running in this process on its own database: the store, the event
// hub and the gRPC server with mutual TLS on 127.0.0.1, wired as the bbs binary wires
// them.
type Stack struct {
	// Database is the private database the store uses.
	Database *Database
	// Store is the store the server uses, for direct seeding and comparisons.
	Store *store.Postgres
	// Address is the gRPC server's host:port.
	Address string

	clientTLS *tls.Config
	grpc      *grpc.Server
	server    *server.Server
	stopHub   context.CancelFunc
	hubDone   chan struct{}
	certDir   string
	closers   []func() error
}

// StartStack creates a fresh database, migrates it and starts the hub and the gRPC
// server. Close stops them and drops the database; StartStack cleans up after itself
// when it fails.
func StartStack(ctx context.Context, cfg StackConfig) (_ *Stack, err error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Stack{}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	if s.Database, err = CreateDatabase(ctx, cfg.AdminURL); err != nil {
		return nil, err
	}
	s.Store, err = store.Open(ctx, store.Config{
		URL:            s.Database.URL,
		MaxConns:       int32(cfg.MaxConns),
		EncryptionKeys: map[string]string{encryptionKeyLabel: "bbsbench-encryption-passphrase"},
		ActiveKeyLabel: encryptionKeyLabel,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := s.Store.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	serverTLS, err := s.writeCerts()
	if err != nil {
		return nil, err
	}
	// Metrics as the bbs binary has them: the interceptors and the hub's gauges.
	registry := prometheus.NewRegistry()
	metrics, err := grpcserver.NewMetrics(registry)
	if err != nil {
		return nil, err
	}
	hub := events.NewHub(s.Store, events.HubOptions{Registerer: registry}, logger)
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	s.stopHub, s.hubDone = stopHub, make(chan struct{})
	go func() {
		defer close(s.hubDone)
		_ = hub.Run(hubCtx)
	}()
	reps := repclient.NewPool(nil, repclient.Options{})
	s.closers = append(s.closers, reps.Close)
	s.server = server.New(server.Deps{DB: s.Store, Hub: hub, Logger: logger, Reps: reps})
	s.grpc, _ = grpcserver.NewServer(serverTLS,
		grpc.ChainUnaryInterceptor(metrics.UnaryInterceptor(), server.UnaryInterceptor(logger)),
		grpc.ChainStreamInterceptor(metrics.StreamInterceptor(), server.StreamInterceptor(logger)),
	)
	s.server.Register(s.grpc)
	metrics.Initialize(s.grpc)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.Address = lis.Addr().String()
	go func() { _ = s.grpc.Serve(lis) }()
	return s, nil
}

// writeCerts writes a dev CA with server and client certificates to a temporary
// directory and returns the server's TLS configuration.
func (s *Stack) writeCerts() (*tls.Config, error) {
	dir, err := os.MkdirTemp("", "bbsbench-certs-")
	if err != nil {
		return nil, err
	}
	s.certDir = dir
	if err := devcerts.WriteDevCerts(dir); err != nil {
		return nil, fmt.Errorf("dev certs: %w", err)
	}
	ca := filepath.Join(dir, "ca.crt")
	serverTLS, err := tlsconfig.Files{CAFile: ca, CertFile: filepath.Join(dir, "bbs.crt"), KeyFile: filepath.Join(dir, "bbs.key")}.Server()
	if err != nil {
		return nil, err
	}
	s.clientTLS, err = tlsconfig.Files{CAFile: ca, CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key")}.Client()
	if err != nil {
		return nil, err
	}
	return serverTLS, nil
}

// NewClient connects a new BBS client (its own TCP+mTLS connection) to the server; the
// stack closes it on Close.
func (s *Stack) NewClient() (*client.Client, error) {
	c, err := client.New(s.Address, s.clientTLS.Clone())
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, c.Close)
	return c, nil
}

// NewClients connects n clients.
func (s *Stack) NewClients(n int) ([]*client.Client, error) {
	clients := make([]*client.Client, n)
	for i := range clients {
		c, err := s.NewClient()
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	return clients, nil
}

// Close stops the server and the hub, closes the store and every client, drops the
// database and removes the certificates. It is safe on a partly started stack.
func (s *Stack) Close() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	s.closers = nil
	if s.grpc != nil {
		s.grpc.Stop()
	}
	if s.server != nil {
		s.server.Wait()
	}
	if s.stopHub != nil {
		s.stopHub()
		<-s.hubDone
	}
	if s.Store != nil {
		s.Store.Close()
	}
	if s.Database != nil {
		errs = append(errs, s.Database.Drop(context.Background()))
	}
	if s.certDir != "" {
		errs = append(errs, os.RemoveAll(s.certDir))
	}
	return errors.Join(errs...)
}
