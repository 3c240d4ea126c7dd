package router_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"drover.dev/devstack/natstest"
	"drover.dev/devstack/natsuser"
	"drover.dev/devstack/router"
	libconfig "drover.dev/lib/config"
)

const waitFor = 10 * time.Second

// startRouter runs a stand-in router on free ports against ns, as natsuser.Router
// with its password in a file, closed with the test.
func startRouter(t *testing.T, ns *natstest.Server, configure func(*router.Config)) *router.Router {
	t.Helper()
	cfg := router.DefaultConfig()
	cfg.NATSAddresses = []string{ns.URL()}
	cfg.NATSUsername, cfg.NATSPasswordFile = natsuser.Router, passwordFile(t, ns.Password(natsuser.Router))
	cfg.ListenAddress, cfg.AdminAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.RegisterInterval = libconfig.Duration(2 * time.Second)
	cfg.PruneThreshold = libconfig.Duration(30 * time.Second)
	if configure != nil {
		configure(&cfg)
	}
	r, err := router.Start(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// passwordFile writes password to a file of its own.
func passwordFile(t *testing.T, password string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.password")
	require.NoError(t, os.WriteFile(path, []byte(password), 0o600))
	return path
}

// connect connects as the route-emitter does (natsuser.RouteEmitter).
func connect(t *testing.T, ns *natstest.Server) *nats.Conn {
	t.Helper()
	nc, err := ns.Connect(natsuser.RouteEmitter, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

func publish(t *testing.T, nc *nats.Conn, subject string, m router.RegistryMessage) {
	t.Helper()
	data, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, nc.Publish(subject, data))
	require.NoError(t, nc.Flush())
}

// backend answers with its name.
func backend(t *testing.T, name string) (host string, port uint32) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", name, r.Host, r.Header.Get(router.HeaderInstanceIndex))
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	var p int
	_, err := fmt.Sscanf(addr, "127.0.0.1:%d", &p)
	require.NoError(t, err)
	return "127.0.0.1", uint32(p)
}

func get(t *testing.T, r *router.Router, host string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+r.Addr()+"/", nil)
	require.NoError(t, err)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(body)
}

func TestRouterAnswersGreetAndAnnouncesStart(t *testing.T) {
	ns := natstest.New(t)
	nc := connect(t, ns)
	starts := make(chan router.StartMessage, 10)
	_, err := nc.Subscribe(router.SubjectStart, func(m *nats.Msg) {
		var s router.StartMessage
		if json.Unmarshal(m.Data, &s) == nil {
			starts <- s
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	r := startRouter(t, ns, func(c *router.Config) { c.ID = "0-test" })
	want := router.StartMessage{ID: "0-test", Hosts: []string{"127.0.0.1"}, MinimumRegisterIntervalInSeconds: 2, PruneThresholdInSeconds: 30}
	select {
	case s := <-starts:
		require.Equal(t, want, s)
	case <-time.After(waitFor):
		t.Fatal("no router.start at start")
	}

	reply, err := nc.Request(router.SubjectGreet, nil, waitFor)
	require.NoError(t, err)
	var got router.StartMessage
	require.NoError(t, json.Unmarshal(reply.Data, &got))
	require.Equal(t, want, got)

	// A NATS restart: the router reconnects and announces router.start again (counted:
	// the test's own subscriber may reconnect after the router's announcement).
	require.Equal(t, 1, r.Stats().Starts)
	ns.Shutdown()
	require.NoError(t, ns.Restart())
	require.Eventually(t, func() bool { return r.Stats().Starts == 2 }, waitFor, 20*time.Millisecond)
	require.True(t, r.Connected())
}

func TestRouterStartsBeforeNATS(t *testing.T) {
	ns := natstest.New(t)
	ns.Shutdown()
	r := startRouter(t, ns, nil)
	require.False(t, r.Connected())
	require.NoError(t, ns.Restart())
	require.Eventually(t, func() bool { return r.Stats().Starts >= 1 }, waitFor, 20*time.Millisecond,
		"router.start once the first connection is made")
}

func TestRouterProxiesRoundRobinAndUnregisters(t *testing.T) {
	ns := natstest.New(t)
	nc := connect(t, ns)
	r := startRouter(t, ns, nil)

	status, hdr, _ := get(t, r, "app.example.com")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "unknown_route", hdr.Get(router.HeaderRouterError))

	h1, p1 := backend(t, "one")
	h2, p2 := backend(t, "two")
	m1 := router.RegistryMessage{Host: h1, Port: p1, URIs: []string{"app.example.com"}, PrivateInstanceID: "ig-1", PrivateInstanceIndex: "0"}
	m2 := router.RegistryMessage{Host: h2, Port: p2, URIs: []string{"app.example.com"}, PrivateInstanceID: "ig-2", PrivateInstanceIndex: "1"}
	publish(t, nc, router.SubjectRegister, m1)
	publish(t, nc, router.SubjectRegister, m2)
	require.Eventually(t, func() bool { return len(r.Routes()["app.example.com"]) == 2 }, waitFor, 10*time.Millisecond)

	seen := map[string]int{}
	for range 4 {
		status, hdr, body := get(t, r, "App.Example.com:8081")
		require.Equal(t, http.StatusOK, status, body)
		seen[body]++
		require.NotEmpty(t, hdr.Get(router.HeaderEndpoint))
	}
	require.Equal(t, map[string]int{"one App.Example.com:8081 0": 2, "two App.Example.com:8081 1": 2}, seen, "round robin, the Host header kept")

	publish(t, nc, router.SubjectUnregister, router.RegistryMessage{Host: h1, Port: p1, URIs: []string{"app.example.com"}})
	require.Eventually(t, func() bool { return len(r.Routes()["app.example.com"]) == 1 }, waitFor, 10*time.Millisecond)
	for range 2 {
		_, _, body := get(t, r, "app.example.com")
		require.Equal(t, "two app.example.com 1", body)
	}

	// The admin server shows the same table.
	resp, err := http.Get("http://" + r.AdminAddr() + "/routes")
	require.NoError(t, err)
	defer resp.Body.Close()
	var routes map[string][]router.Endpoint
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&routes))
	require.Len(t, routes["app.example.com"], 1)
	require.Equal(t, fmt.Sprintf("%s:%d", h2, p2), routes["app.example.com"][0].Address)
	require.Equal(t, "ig-2", routes["app.example.com"][0].PrivateInstanceID)
	require.Equal(t, router.Stats{Registers: 2, Unregisters: 1, Starts: 1, Endpoints: 1}, r.Stats())
}

func TestRouterBackendFailure(t *testing.T) {
	ns := natstest.New(t)
	nc := connect(t, ns)
	r := startRouter(t, ns, nil)
	l := httptest.NewServer(http.NotFoundHandler())
	addr := l.Listener.Addr().String()
	l.Close()
	var port uint32
	_, err := fmt.Sscanf(addr, "127.0.0.1:%d", &port)
	require.NoError(t, err)
	publish(t, nc, router.SubjectRegister, router.RegistryMessage{Host: "127.0.0.1", Port: port, URIs: []string{"gone.example.com"}})
	require.Eventually(t, func() bool { return r.Stats().Endpoints == 1 }, waitFor, 10*time.Millisecond)
	status, hdr, _ := get(t, r, "gone.example.com")
	require.Equal(t, http.StatusBadGateway, status)
	require.Equal(t, "endpoint_failure", hdr.Get(router.HeaderRouterError))
}

// TestRouterRetriesRefusedConnections: as gorouter, a request whose endpoint refuses
// the connection goes to the pool's next endpoint, so a dead endpoint next to a live
// one fails no request.
func TestRouterRetriesRefusedConnections(t *testing.T) {
	ns := natstest.New(t)
	nc := connect(t, ns)
	r := startRouter(t, ns, nil)
	l := httptest.NewServer(http.NotFoundHandler())
	deadAddr := l.Listener.Addr().String()
	l.Close()
	var deadPort uint32
	_, err := fmt.Sscanf(deadAddr, "127.0.0.1:%d", &deadPort)
	require.NoError(t, err)
	host, port := backend(t, "live")
	publish(t, nc, router.SubjectRegister, router.RegistryMessage{Host: "127.0.0.1", Port: deadPort, URIs: []string{"mixed.example.com"}, PrivateInstanceIndex: "0"})
	publish(t, nc, router.SubjectRegister, router.RegistryMessage{Host: host, Port: port, URIs: []string{"mixed.example.com"}, PrivateInstanceIndex: "1"})
	require.Eventually(t, func() bool { return r.Stats().Endpoints == 2 }, waitFor, 10*time.Millisecond)
	for range 4 {
		status, hdr, body := get(t, r, "mixed.example.com")
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, fmt.Sprintf("%s:%d", host, port), hdr.Get(router.HeaderEndpoint))
		require.Equal(t, "1", hdr.Get(router.HeaderInstanceIndex))
		require.True(t, strings.HasPrefix(body, "live mixed.example.com 1"), body)
	}
}

func TestRouterPrunesStaleNonTLSEndpoints(t *testing.T) {
	ns := natstest.New(t)
	nc := connect(t, ns)
	r := startRouter(t, ns, func(c *router.Config) {
		c.RegisterInterval = libconfig.Duration(time.Second)
		c.PruneThreshold = libconfig.Duration(time.Second)
		c.PruneInterval = libconfig.Duration(100 * time.Millisecond)
	})
	publish(t, nc, router.SubjectRegister, router.RegistryMessage{Host: "10.0.0.1", Port: 1000, URIs: []string{"plain.example.com"}})
	publish(t, nc, router.SubjectRegister, router.RegistryMessage{Host: "10.0.0.1", Port: 1000, TLSPort: 1001, URIs: []string{"tls.example.com"}})
	require.Eventually(t, func() bool { return r.Stats().Endpoints == 2 }, waitFor, 10*time.Millisecond)
	require.Eventually(t, func() bool { return len(r.Routes()["plain.example.com"]) == 0 }, waitFor, 20*time.Millisecond,
		"the non-TLS endpoint is pruned after the threshold")
	require.Len(t, r.Routes()["tls.example.com"], 1, "a TLS endpoint is never pruned by age")
}

func TestRouterConfigValidation(t *testing.T) {
	cfg := router.DefaultConfig()
	cfg.NATSAddresses = nil
	cfg.ListenAddress = "nope"
	cfg.RegisterInterval = libconfig.Duration(100 * time.Millisecond)
	cfg.PruneInterval = 0
	cfg.LogLevel = "loud"
	err := cfg.Validate()
	for _, field := range []string{"nats_addresses", "listen_address", "register_interval", "prune_interval", "log_level"} {
		require.ErrorContains(t, err, field)
	}
	def := router.DefaultConfig()
	require.NoError(t, def.Validate())

	for _, tc := range []struct {
		field string
		edit  func(c *router.Config)
	}{
		{"nats_password_file", func(c *router.Config) { c.NATSUsername = "router" }},
		{"nats_password_file", func(c *router.Config) { c.NATSUsername, c.NATSPassword, c.NATSPasswordFile = "router", "p", "/f" }},
		{"nats_username", func(c *router.Config) { c.NATSPasswordFile = "/f" }},
		{"nats_tls", func(c *router.Config) { c.NATSTLS.CAFile = "/ca.crt" }},
	} {
		c := router.DefaultConfig()
		tc.edit(&c)
		require.ErrorContains(t, c.Validate(), tc.field)
	}
}

// TestRouterWithAWrongPasswordGetsNoRoutes: a router the server refuses is never
// connected, announces nothing and learns no route; Start does not fail (it retries).
func TestRouterWithAWrongPasswordGetsNoRoutes(t *testing.T) {
	ns := natstest.New(t)
	refused := startRouter(t, ns, func(c *router.Config) { c.NATSPasswordFile = passwordFile(t, "wrong") })
	admitted := startRouter(t, ns, nil)
	nc := connect(t, ns)
	require.Eventually(t, admitted.Connected, waitFor, 20*time.Millisecond)
	host, port := backend(t, "a")
	publish(t, nc, router.SubjectRegister, router.RegistryMessage{Host: host, Port: port, URIs: []string{"a.example.com"}})
	require.Eventually(t, func() bool { return admitted.Stats().Registers == 1 }, waitFor, 20*time.Millisecond)
	require.False(t, refused.Connected())
	require.Zero(t, refused.Stats().Starts)
	require.Zero(t, refused.Stats().Registers)
}

func TestRouterAppliesRegistersAndUnregistersInPublishOrder(t *testing.T) {
	ns := natstest.New(t)
	nc := connect(t, ns)
	r := startRouter(t, ns, nil)
	const n = 200
	for i := range n {
		m := router.RegistryMessage{Host: "127.0.0.1", Port: uint32(20000 + i), URIs: []string{fmt.Sprintf("app-%d.example.com", i)}}
		publish(t, nc, router.SubjectRegister, m)
		publish(t, nc, router.SubjectUnregister, m)
	}
	require.Eventually(t, func() bool { s := r.Stats(); return s.Registers == n && s.Unregisters == n }, waitFor, 10*time.Millisecond)
	require.Empty(t, r.Routes(), "every unregister came after its register")
}
