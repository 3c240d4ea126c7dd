// Package router is a small stand-in for gorouter, for tests and the dev stack: it
// speaks gorouter's NATS protocol (answers router.greet, announces router.start at start
// and after every reconnect, applies router.register / router.unregister to its table,
// prunes non-TLS endpoints that were not refreshed in time), proxies HTTP by Host header
// round robin over a URI's endpoints, and serves its table as JSON (GET /routes).
package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	libconfig "drover.dev/lib/config"
	"drover.dev/lib/handover"
)

// Router is a running stand-in router.
type Router struct {
	cfg    Config
	logger *slog.Logger
	start  StartMessage

	mu          sync.Mutex
	table       *Table
	next        map[string]int // round-robin position per URI
	registers   int
	unregisters int
	starts      int

	nc         *nats.Conn
	subscribed atomic.Bool
	announced  atomic.Bool
	proxy      *http.Server
	admin      *http.Server
	proxyLis   net.Listener
	adminLis   net.Listener
	cancel     context.CancelFunc
	done       sync.WaitGroup
	closeOnce  sync.Once
}

// Stats counts what the router saw and sent.
type Stats struct {
	Registers   int `json:"registers"`
	Unregisters int `json:"unregisters"`
	Starts      int `json:"starts"`
	Endpoints   int `json:"endpoints"`
}

// Start validates cfg, listens on the proxy and admin addresses (port 0 picks a free
// one, see Addr and AdminAddr), connects to NATS (retrying in the background when no
// server answers yet) and starts pruning. Close stops it all.
func Start(cfg Config, logger *slog.Logger) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("stand-in router config: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// As gorouter: a register interval above the prune threshold raises the threshold.
	if cfg.PruneThreshold < cfg.RegisterInterval {
		cfg.PruneThreshold = cfg.RegisterInterval
	}
	if cfg.ID == "" {
		cfg.ID = "0-" + uuid.NewString()
	}
	r := &Router{cfg: cfg, logger: logger, table: NewTable(), next: map[string]int{}}
	var err error
	if r.proxyLis, err = handover.Listen(cfg.ListenAddress); err != nil {
		return nil, fmt.Errorf("listen_address: %w", err)
	}
	if r.adminLis, err = handover.Listen(cfg.AdminAddress); err != nil {
		r.proxyLis.Close()
		return nil, fmt.Errorf("admin_address: %w", err)
	}
	host, _, _ := net.SplitHostPort(r.proxyLis.Addr().String())
	r.start = StartMessage{
		ID:                               cfg.ID,
		Hosts:                            []string{host},
		MinimumRegisterIntervalInSeconds: int(cfg.RegisterInterval.Duration() / time.Second),
		PruneThresholdInSeconds:          int(cfg.PruneThreshold.Duration() / time.Second),
	}
	r.proxy = &http.Server{Handler: http.HandlerFunc(r.serveProxy), ReadHeaderTimeout: 10 * time.Second}
	r.admin = &http.Server{Handler: r.adminHandler(), ReadHeaderTimeout: 10 * time.Second}
	if err := r.connect(); err != nil {
		r.proxyLis.Close()
		r.adminLis.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.goServe(r.proxy, r.proxyLis)
	r.goServe(r.admin, r.adminLis)
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		r.pruneLoop(ctx)
	}()
	return r, nil
}

func (r *Router) goServe(srv *http.Server, lis net.Listener) {
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.logger.Error("http-server-failed", "address", lis.Addr().String(), "error", err)
		}
	}()
}

// connect subscribes to the router subjects and announces router.start whenever the
// connection is (re)established; the subscriptions are in place before each start.
func (r *Router) connect() error {
	opts := []nats.Option{
		nats.Name("standin-router"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.IgnoreAuthErrorAbort(), // a refused password is retried, not given up on
		nats.ConnectHandler(func(nc *nats.Conn) { r.announceFirst(nc) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { r.announce(nc, "reconnected") }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			r.logger.Info("nats-disconnected", "error", err)
		}),
	}
	if r.cfg.NATSUsername != "" {
		password, err := libconfig.Password(r.cfg.NATSPassword, r.cfg.NATSPasswordFile)
		if err != nil {
			return fmt.Errorf("nats_password_file: %w", err)
		}
		opts = append(opts, nats.UserInfo(r.cfg.NATSUsername, password))
	}
	if r.cfg.NATSTLS.Enabled() {
		tlsConfig, err := r.cfg.NATSTLS.Client()
		if err != nil {
			return fmt.Errorf("nats_tls: %w", err)
		}
		opts = append(opts, nats.Secure(tlsConfig))
	}
	nc, err := nats.Connect(r.cfg.natsURL(), opts...)
	if err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	r.nc = nc
	// Like gorouter (mbus/subscriber.go), registers and unregisters arrive on one
	// subscription to router.*, so they are applied in the order they were published
	// (two subscriptions run on two goroutines and may reorder a register and the
	// unregister that follows it).
	subs := map[string]nats.MsgHandler{
		SubjectGreet: r.onGreet,
		"router.*":   r.onRoute,
	}
	for subject, handler := range subs {
		sub, err := nc.Subscribe(subject, handler)
		if err != nil {
			nc.Close()
			return fmt.Errorf("nats subscribe %s: %w", subject, err)
		}
		// gorouter's pending limits, so bursts are not dropped by the client.
		if err := sub.SetPendingLimits(131072, 131072*1024); err != nil {
			nc.Close()
			return fmt.Errorf("nats subscribe %s: %w", subject, err)
		}
	}
	r.subscribed.Store(true)
	if nc.IsConnected() {
		// The server has the subscriptions before Start returns, so nothing published
		// after it is missed.
		if err := nc.FlushTimeout(5 * time.Second); err != nil {
			r.logger.Info("nats-flush-failed", "error", err)
		}
		r.announceFirst(nc)
	}
	return nil
}

// onRoute applies router.register and router.unregister; other router.* subjects
// (router.start, router.greet) are ignored here, as gorouter does.
func (r *Router) onRoute(m *nats.Msg) {
	switch m.Subject {
	case SubjectRegister:
		r.onRegister(m)
	case SubjectUnregister:
		r.onUnregister(m)
	}
}

// announceFirst announces the first connection once: nats.go calls ConnectHandler for
// it, possibly before connect has subscribed, so connect announces too.
func (r *Router) announceFirst(nc *nats.Conn) {
	if r.subscribed.Load() && r.announced.CompareAndSwap(false, true) {
		r.announce(nc, "connected")
	}
}

// announce publishes router.start (gorouter does at boot and after every reconnect),
// once the subscriptions exist: connect announces itself when the first connection was
// made before it subscribed.
func (r *Router) announce(nc *nats.Conn, why string) {
	if !r.subscribed.Load() {
		return
	}
	data, _ := json.Marshal(r.start)
	if err := nc.Publish(SubjectStart, data); err != nil {
		r.logger.Error("router-start-failed", "error", err)
		return
	}
	r.mu.Lock()
	r.starts++
	r.mu.Unlock()
	r.logger.Info("router-start-published", "why", why, "id", r.start.ID,
		"register_interval_seconds", r.start.MinimumRegisterIntervalInSeconds)
}

func (r *Router) onGreet(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	data, _ := json.Marshal(r.start)
	if err := m.Respond(data); err != nil {
		r.logger.Error("greet-reply-failed", "error", err)
	}
}

func (r *Router) onRegister(m *nats.Msg) {
	var msg RegistryMessage
	if err := json.Unmarshal(m.Data, &msg); err != nil {
		r.logger.Error("register-invalid", "error", err)
		return
	}
	r.mu.Lock()
	r.registers++
	added, err := r.table.Register(msg, time.Now())
	r.mu.Unlock()
	if err != nil {
		r.logger.Error("register-invalid", "error", err)
		return
	}
	if added > 0 {
		r.logger.Debug("endpoint-registered", "uris", msg.URIs, "host", msg.Host, "port", msg.Port, "tls_port", msg.TLSPort)
	}
}

func (r *Router) onUnregister(m *nats.Msg) {
	var msg RegistryMessage
	if err := json.Unmarshal(m.Data, &msg); err != nil {
		r.logger.Error("unregister-invalid", "error", err)
		return
	}
	r.mu.Lock()
	r.unregisters++
	removed, err := r.table.Unregister(msg)
	r.mu.Unlock()
	if err != nil {
		r.logger.Error("unregister-invalid", "error", err)
		return
	}
	if removed > 0 {
		r.logger.Debug("endpoint-unregistered", "uris", msg.URIs, "host", msg.Host, "port", msg.Port, "tls_port", msg.TLSPort)
	}
}

func (r *Router) pruneLoop(ctx context.Context) {
	ticker := time.NewTicker(r.cfg.PruneInterval.Duration())
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			r.mu.Lock()
			pruned := r.table.Prune(now, r.cfg.PruneThreshold.Duration())
			r.mu.Unlock()
			for _, p := range pruned {
				r.logger.Info("endpoint-pruned", "route", p)
			}
		}
	}
}

// Routes returns a copy of the table: URI → endpoints sorted by address.
func (r *Router) Routes() map[string][]Endpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.table.Routes()
}

// Stats returns the router's counters.
func (r *Router) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Stats{Registers: r.registers, Unregisters: r.unregisters, Starts: r.starts, Endpoints: r.table.Len()}
}

// StartMessage is what the router announces and answers greets with.
func (r *Router) StartMessage() StartMessage { return r.start }

// Connected reports whether the NATS connection is up.
func (r *Router) Connected() bool { return r.nc.IsConnected() }

// Addr is the proxy's listening address.
func (r *Router) Addr() string { return r.proxyLis.Addr().String() }

// AdminAddr is the admin server's listening address.
func (r *Router) AdminAddr() string { return r.adminLis.Addr().String() }

// Close disconnects from NATS and stops the servers and the pruning.
func (r *Router) Close() {
	r.closeOnce.Do(func() {
		r.cancel()
		r.nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.proxy.Shutdown(ctx)
		_ = r.admin.Shutdown(ctx)
		r.done.Wait()
	})
}
