package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/test/bufconn"

	"drover.dev/bbs/auctioneerclient"
	"drover.dev/bbs/client"
	"drover.dev/bbs/config"
	"drover.dev/bbs/events"
	"drover.dev/bbs/httpapi"
	"drover.dev/bbs/server"
	"drover.dev/bbs/store"
	"drover.dev/lib/authz"
	"drover.dev/lib/debugserver"
	"drover.dev/lib/grpcserver"
	"drover.dev/lib/httpserver"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	repclient "drover.dev/rep/client"
)

const (
	// inProcessBufferBytes sizes the bufconn pipe between the HTTP API and gRPC.
	inProcessBufferBytes = 1 << 20
	// inProcessWindowBytes are the fixed flow-control windows of the in-process client:
	// a stalled event stream over HTTP holds at most this much in flight (gRPC's
	// default, window growth, would let each grow to megabytes).
	inProcessWindowBytes = 64 << 10
	// inProcessTarget is the dial target of the in-process connection (any name works).
	inProcessTarget = "passthrough:///bbs-in-process"
	// backgroundWorkGrace bounds how long shutdown waits for side effects in flight
	// before it cancels them.
	backgroundWorkGrace = 10 * time.Second
	// readHeaderTimeout bounds how long an HTTPS client may take to send its headers.
	readHeaderTimeout = 10 * time.Second
)

// bbs is the process's shared wiring. Fields below the line are set by the members as
// they start, and only read by members that start later.
type bbs struct {
	cfg       *config.Config
	logger    *slog.Logger
	level     *slog.LevelVar
	registry  *prometheus.Registry
	metrics   *grpcserver.Metrics
	serverTLS *tls.Config
	// callbackTLS presents the BBS's certificate on task callbacks.
	callbackTLS *tls.Config
	// clientTLS is presented to reps and the auctioneer.
	clientTLS *tls.Config
	reps      *repclient.Pool
	// databaseURL is the connection string with the password (never logged).
	databaseURL string
	names       authz.Names
	guard       *authz.Guard

	db  *store.Postgres
	hub *events.Hub
	api *server.Server
}

// newBBS loads the certificates and prepares what every member shares.
func newBBS(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*bbs, error) {
	serverTLS, clientTLS, err := cfg.TLS.ServerAndClient()
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	callbackTLS, err := cfg.TLS.OutboundHTTPS()
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	databaseURL, err := cfg.DatabaseConnString()
	if err != nil {
		return nil, err
	}
	registry := debugserver.NewRegistry()
	metrics, err := grpcserver.NewMetrics(registry)
	if err != nil {
		return nil, err
	}
	names, err := cfg.Names()
	if err != nil {
		return nil, err
	}
	guard, err := server.NewGuard(names, logger, registry)
	if err != nil {
		return nil, err
	}
	b := &bbs{
		names:       names,
		guard:       guard,
		cfg:         cfg,
		databaseURL: databaseURL,
		logger:      logger,
		level:       level,
		registry:    registry,
		metrics:     metrics,
		serverTLS:   serverTLS,
		callbackTLS: callbackTLS,
		clientTLS:   clientTLS,
		reps:        repclient.NewPool(clientTLS, repclient.Options{}),
	}
	return b, nil
}

// Close releases the outbound connections.
func (b *bbs) Close() {
	_ = b.reps.Close()
}

// Members starts the BBS in dependency order and stops it in reverse.
func (b *bbs) Members() ifrit.Runner {
	return grouper.NewOrdered(os.Interrupt, grouper.Members{
		{Name: "migrations", Runner: ifrit.RunFunc(b.runMigrations)},
		{Name: "event-hub", Runner: ifrit.RunFunc(b.runEventHub)},
		{Name: "grpc-server", Runner: ifrit.RunFunc(b.runGRPCServer)},
		{Name: "http-server", Runner: ifrit.RunFunc(b.runHTTPServer)},
		{Name: "debug-server", Runner: debugserver.New(debugserver.Addresses{Metrics: b.cfg.DebugAddress, Admin: b.cfg.DebugAdminAddress}, b.registry, b.level, b.logger)},
	})
}

// runMigrations opens the store and migrates it, becomes ready, and closes the store
// when signalled.
func (b *bbs) runMigrations(signals <-chan os.Signal, ready chan<- struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, store.Config{
		URL:            b.databaseURL,
		MaxConns:       int32(b.cfg.MaxDatabaseConnections),
		EncryptionKeys: b.cfg.EncryptionKeys,
		ActiveKeyLabel: b.cfg.ActiveKeyLabel,
	}, b.logger)
	if err != nil {
		b.logger.Error("failed-to-open-store", "error", err.Error())
		return err
	}
	defer db.Close()

	b.logger.Info("migrations-starting")
	migrated := make(chan error, 1)
	go func() { migrated <- db.Migrate(ctx) }()
	select {
	case err := <-migrated:
		if err != nil {
			b.logger.Error("failed-to-migrate", "error", err.Error())
			return fmt.Errorf("migrate: %w", err)
		}
	case <-signals:
		cancel()
		<-migrated
		return nil
	}
	b.logger.Info("migrations-finished")
	b.db = db
	close(ready)
	<-signals
	return nil
}

// runEventHub runs the event hub until signalled.
func (b *bbs) runEventHub(signals <-chan os.Signal, ready chan<- struct{}) error {
	hub := events.NewHub(b.db, events.HubOptions{
		Retention:                 b.cfg.EventRetention.Duration(),
		KeepEvents:                b.cfg.EventRetentionCount,
		SendTimeout:               b.cfg.EventWriteTimeout.Duration(),
		MaxSubscribersPerIdentity: b.cfg.MaxSubscribersPerIdentity,
		Registerer:                b.registry,
	}, b.logger)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- hub.Run(ctx) }()
	b.hub = hub
	close(ready)
	select {
	case <-signals:
		cancel()
		<-stopped
		return nil
	case err := <-stopped:
		b.logger.Error("event-hub-failed", "error", fmt.Sprint(err))
		return fmt.Errorf("event hub stopped: %w", err)
	}
}

// runGRPCServer registers the BBS services, reports SERVING and serves gRPC over mTLS;
// once stopped it waits (bounded) for side effects still in flight. With an
// auctioneer_address, auctions go to the holder of the auctioneer lock, or to that
// address while the lock holds no usable address.
func (b *bbs) runGRPCServer(signals <-chan os.Signal, ready chan<- struct{}) error {
	var auctioneer auctioneerv1.AuctioneerServiceClient
	if b.cfg.AuctioneerAddress != "" {
		c := auctioneerclient.New(b.db, auctioneerclient.Options{
			Fallback:    b.cfg.AuctioneerAddress,
			DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(b.clientTLS))},
			Logger:      b.logger,
		})
		defer c.Close()
		auctioneer = c
	}
	b.api = server.New(server.Deps{
		DB:             b.db,
		Hub:            b.hub,
		Auctioneer:     auctioneer,
		Reps:           b.reps,
		Logger:         b.logger,
		MaxTaskRetries: b.cfg.MaxTaskRetries,
		HTTPClient:     b.callbackClient(),
		Registerer:     b.registry,
	})
	srv, healthServer := b.newGRPCServer(b.serverTLS, b.guard)
	b.metrics.Initialize(srv)
	grpcserver.SetServing(healthServer, srv)

	err := grpcserver.New(b.cfg.GRPCAddress, srv, healthServer, b.logger).Run(signals, ready)
	b.stopBackgroundWork()
	return err
}

// callbackClient posts task callbacks, presenting the BBS's certificate so that a
// drover receiver (the stager) can admit the BBS only.
func (b *bbs) callbackClient() *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = b.callbackTLS
	return &http.Client{Timeout: b.cfg.TaskCallbackTimeout.Duration(), Transport: transport}
}

// newGRPCServer makes a gRPC server with the BBS services and interceptors: metrics
// outermost so that they see the final status, then authorisation (server.Policy:
// refused callers get PermissionDenied before their request is even validated), then
// validation and logging, then any extra stream interceptors.
func (b *bbs) newGRPCServer(tlsConfig *tls.Config, guard *authz.Guard, extra ...grpc.StreamServerInterceptor) (*grpc.Server, *health.Server) {
	streams := append([]grpc.StreamServerInterceptor{b.metrics.StreamInterceptor(), guard.StreamInterceptor(), server.StreamInterceptor(b.logger)}, extra...)
	srv, healthServer := grpcserver.NewServer(tlsConfig,
		grpc.ChainUnaryInterceptor(b.metrics.UnaryInterceptor(), guard.UnaryInterceptor(), server.UnaryInterceptor(b.logger)),
		grpc.ChainStreamInterceptor(streams...),
	)
	b.api.Register(srv)
	return srv, healthServer
}

// stopBackgroundWork gives the side effects in flight (auction requests, rep calls,
// task callbacks) backgroundWorkGrace to finish, then cancels them.
func (b *bbs) stopBackgroundWork() {
	ctx, cancel := context.WithTimeout(context.Background(), backgroundWorkGrace)
	defer cancel()
	if err := b.api.Shutdown(ctx); err != nil {
		b.logger.Error("background-work-cancelled", "waited", backgroundWorkGrace.String())
	}
}

// runHTTPServer serves the HTTP/JSON API over HTTPS with the gRPC server's mTLS policy.
// The API calls the BBS services through an in-process gRPC server on a bufconn
// listener, with the same services and interceptors as the network one; the HTTP API
// admits operators only, so its in-process calls act as an operator.
func (b *bbs) runHTTPServer(signals <-chan os.Signal, ready chan<- struct{}) error {
	// Event streams over HTTP count against their caller's cap: the HTTP API forwards
	// its caller's identity, which only this listener trusts.
	inProcess, inProcessHealth := b.newGRPCServer(nil, b.guard.Plaintext(server.InProcessIdentity()), server.TrustForwardedIdentity())
	lis := bufconn.Listen(inProcessBufferBytes)
	conn, err := client.New(inProcessTarget, nil,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithInitialWindowSize(inProcessWindowBytes),
		grpc.WithInitialConnWindowSize(inProcessWindowBytes),
	)
	if err != nil {
		return fmt.Errorf("in-process client: %w", err)
	}
	defer conn.Close()

	httpsServer := &http.Server{
		Addr: b.cfg.HTTPAddress,
		Handler: httpapi.New(conn, httpapi.Options{
			MaxBodyBytes:       b.cfg.MaxRequestBodyBytes,
			Logger:             b.logger,
			EventWriteTimeout:  b.cfg.EventWriteTimeout.Duration(),
			EventStreamTooSlow: b.hub.CountTooSlowSSE,
			Authorize:          server.OperatorsOnlyHTTP(b.names),
		}),
		TLSConfig:         b.serverTLS,
		ReadHeaderTimeout: readHeaderTimeout,
	}
	inProcessLogger := b.logger.With("listener", "in-process")
	return grouper.NewOrdered(os.Interrupt, grouper.Members{
		{Name: "in-process-grpc", Runner: grpcserver.FromListener(lis, inProcess, inProcessHealth, inProcessLogger)},
		{Name: "https", Runner: httpserver.New(httpsServer, b.logger)},
	}).Run(signals, ready)
}
