package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	libconfig "drover.dev/lib/config"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
	reconfig "drover.dev/route-emitter/config"

	"drover.dev/devstack/natsuser"
	"drover.dev/devstack/router"
)

// The routing side's programs.
var (
	RouteEmitterBinary  = Binary{Name: "route-emitter", Package: "./route-emitter/cmd/route-emitter"}
	StandinRouterBinary = Binary{Name: "standin-router", Package: "./devstack/cmd/standin-router"}
)

// Routing settings of the stacks.
const (
	// DevRegisterInterval is the register interval the dev stack's router asks for.
	DevRegisterInterval = 5 * time.Second
	// routeEmitterStartedMessage is the log line the route-emitter writes once it is ready.
	routeEmitterStartedMessage = `"msg":"route-emitter-started"`
	// routeEmitterLockOwner is the lock owner of every stack's route-emitter.
	routeEmitterLockOwner = "devstack-route-emitter"
	// RouteEmitterCommonName is the common name of the route-emitter's certificate.
	RouteEmitterCommonName = "route-emitter"
)

// The dev stack's routing ports.
var (
	DefaultRouteEmitterPorts = RouteEmitterPorts{GRPC: 17010, Debug: 17009}
	DefaultRouterPorts       = RouterPorts{HTTP: 8081, Admin: 8082}
)

// RouteEmitterPorts are the route-emitter's gRPC (RouteEmitterService) and debug ports.
type RouteEmitterPorts struct{ GRPC, Debug int }

// RouterPorts are the stand-in router's proxy and admin ports.
type RouterPorts struct{ HTTP, Admin int }

// RouteEmitter is the stack's route-emitter (global mode): a Service with its
// configuration.
type RouteEmitter struct {
	Service
	Config reconfig.Config `json:"config"`
	Certs  Certs           `json:"certs"`
}

// Address is host:port of the route-emitter's gRPC server.
func (e *RouteEmitter) Address() string { return e.Config.ListenAddress }

// DebugURL is the base URL of the route-emitter's debug server.
func (e *RouteEmitter) DebugURL() string { return "http://" + e.Config.DebugAddress }

// Start writes the configuration, starts the route-emitter and waits until it is Healthy.
func (e *RouteEmitter) Start(ctx context.Context) error {
	return e.start(ctx, e.Config, ComponentStartTimeout, e.Healthy)
}

// Restart stops the route-emitter if it runs and starts it again.
func (e *RouteEmitter) Restart(ctx context.Context) error {
	if err := e.Stop(ctx); err != nil {
		return err
	}
	return e.Start(ctx)
}

// Healthy reports whether the route-emitter is ready: its debug server answers
// /healthz and it logged route-emitter-started since it was started.
func (e *RouteEmitter) Healthy(ctx context.Context) error {
	if err := checkHTTP(ctx, e.DebugURL()+"/healthz"); err != nil {
		return err
	}
	if !e.LoggedSinceStart(routeEmitterStartedMessage) {
		return fmt.Errorf("%s did not log route-emitter-started yet", e.Name)
	}
	return nil
}

// ListRoutes asks the route-emitter for its table, with the stack's client certificate.
func (e *RouteEmitter) ListRoutes(ctx context.Context, req *routeemitterv1.ListRoutesRequest) (*routeemitterv1.ListRoutesResponse, error) {
	tlsConf, err := e.Certs.ClientTLS()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(e.Address(), grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, healthAttemptTimeout)
	defer cancel()
	return routeemitterv1.NewRouteEmitterServiceClient(conn).ListRoutes(ctx, req)
}

// Router is the stack's stand-in router (devstack/cmd/standin-router).
type Router struct {
	Service
	Config router.Config `json:"config"`
}

// URL is the base URL of the router's proxy (send requests with the route's Host).
func (r *Router) URL() string { return "http://" + r.Config.ListenAddress }

// AdminURL is the base URL of the router's admin server (/routes, /stats, /healthz).
func (r *Router) AdminURL() string { return "http://" + r.Config.AdminAddress }

// Start writes the configuration, starts the router and waits until it is Healthy.
func (r *Router) Start(ctx context.Context) error {
	return r.start(ctx, r.Config, ComponentStartTimeout, r.Healthy)
}

// Restart stops the router if it runs and starts it again.
func (r *Router) Restart(ctx context.Context) error {
	if err := r.Stop(ctx); err != nil {
		return err
	}
	return r.Start(ctx)
}

// Healthy reports whether the router's admin server answers /healthz (NATS connected).
func (r *Router) Healthy(ctx context.Context) error { return checkHTTP(ctx, r.AdminURL()+"/healthz") }

// Routes fetches the router's table: URI → endpoints sorted by address.
func (r *Router) Routes(ctx context.Context) (map[string][]router.Endpoint, error) {
	var routes map[string][]router.Endpoint
	return routes, getJSON(ctx, r.AdminURL()+"/routes", &routes)
}

// Stats fetches the router's counters.
func (r *Router) Stats(ctx context.Context) (router.Stats, error) {
	var st router.Stats
	return st, getJSON(ctx, r.AdminURL()+"/stats", &st)
}

func getJSON(ctx context.Context, url string, into any) error {
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
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// EnsureRouteEmitter writes the route-emitter's certificate (server and client use).
func (c Certs) EnsureRouteEmitter() error {
	ca, err := devcerts.LoadOrCreateCA(c.Dir)
	if err != nil {
		return err
	}
	return devcerts.EnsureCert(ca, c.Dir, "route-emitter", RouteEmitterCommonName, c.hostsFor("route-emitter", componentHosts))
}

// RouteEmitter is the route-emitter's certificate and key.
func (c Certs) RouteEmitter() tlsconfig.Files { return c.pair("route-emitter") }

// AddRouting describes the route-emitter (global mode, its state file in its directory,
// talking to the first BBS and to s.NATS) and the stand-in router, the router asking
// for registerInterval. Call it after AddBBS, with s.NATS set.
func (s *Stack) AddRouting(emitterPorts RouteEmitterPorts, routerPorts RouterPorts, registerInterval time.Duration, detached bool) {
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	cfg := reconfig.Default()
	cfg.ListenAddress = addr(emitterPorts.GRPC)
	cfg.DebugAddress = addr(emitterPorts.Debug)
	cfg.BBSAddress = s.BBS[0].GRPCAddress()
	cfg.TLS = s.Certs.RouteEmitter()
	cfg.NATSAddresses = []string{s.NATS.URL}
	cfg.NATSUsername, cfg.NATSPasswordFile = natsuser.RouteEmitter, s.NATS.PasswordFiles[natsuser.RouteEmitter]
	cfg.LockOwner = routeEmitterLockOwner
	e := &RouteEmitter{Config: cfg, Certs: s.Certs}
	s.describe(&e.Service, "route-emitter", RouteEmitterBinary, detached)
	e.Config.StateFile = e.Dir + "/state.json"
	s.RouteEmitter = e

	rc := router.DefaultConfig()
	rc.NATSAddresses = []string{s.NATS.URL}
	rc.NATSUsername, rc.NATSPasswordFile = natsuser.Router, s.NATS.PasswordFiles[natsuser.Router]
	rc.ListenAddress = addr(routerPorts.HTTP)
	rc.AdminAddress = addr(routerPorts.Admin)
	rc.RegisterInterval = libconfig.Duration(registerInterval)
	r := &Router{Config: rc}
	s.describe(&r.Service, "router", StandinRouterBinary, detached)
	s.Router = r
}

// startRouting starts the router, then the route-emitter (which greets it).
func (s *Stack) startRouting(ctx context.Context, logf func(string, ...any)) error {
	if r := s.Router; r != nil {
		logf("starting stand-in router (http %s, admin %s, nats %s)", r.Config.ListenAddress, r.Config.AdminAddress, s.NATS.URL)
		if err := r.Start(ctx); err != nil {
			return err
		}
	}
	if e := s.RouteEmitter; e != nil {
		logf("starting route-emitter (grpc %s, debug %s)", e.Config.ListenAddress, e.Config.DebugAddress)
		if err := e.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}
