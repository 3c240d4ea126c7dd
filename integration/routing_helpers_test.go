package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	"drover.dev/devstack"
	"drover.dev/devstack/devstacktest"
	"drover.dev/devstack/natsuser"
	"drover.dev/devstack/router"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Deadlines of the routing scenarios.
const (
	// registerLatency is how soon after an instance turns RUNNING its register must be
	// on NATS (acceptance 1).
	registerLatency = time.Second
	// routeWait bounds waits for the router's table to change after a change in the BBS.
	routeWait = 15 * time.Second
)

// routedStack is a cell stack with NATS, the stand-in router and the route-emitter.
type routedStack struct {
	*cellStack
}

// newRoutedStack starts a stack with n cells and the routing side.
func newRoutedStack(t *testing.T, n int, routing devstacktest.RoutingOptions) *routedStack {
	t.Helper()
	s := devstacktest.New(t, devstacktest.Options{Cells: n, Routing: &routing})
	return &routedStack{cellStack: &cellStack{Stack: s, bbs: devstacktest.Client(t, s, 0)}}
}

// cfRouterRoutes is the routes map of an LRP routing hostnames to containerPort.
func cfRouterRoutes(t *testing.T, containerPort uint32, hostnames ...string) map[string]*structpb.Value {
	t.Helper()
	hs := make([]any, len(hostnames))
	for i, h := range hostnames {
		hs[i] = h
	}
	v, err := structpb.NewValue([]any{map[string]any{"hostnames": hs, "port": float64(containerPort)}})
	require.NoError(t, err)
	return map[string]*structpb.Value{"cf-router": v}
}

// routedLRP is httpdLRP with a cf-router route of hostname to its HTTP port.
func routedLRP(t *testing.T, guid, hostname string, instances int32) *modelsv1.DesiredLRP {
	lrp := httpdLRP(guid, instances)
	lrp.Routes = cfRouterRoutes(t, httpPort, hostname)
	return lrp
}

// natsMessage is one router.register / router.unregister the recorder received.
type natsMessage struct {
	Subject string
	At      time.Time
	Msg     router.RegistryMessage
	Raw     []byte
}

// natsRecorder subscribes to router.register and router.unregister and keeps every
// message with its receive time.
type natsRecorder struct {
	mu       sync.Mutex
	messages []natsMessage
	// onMessage, when set before messages arrive, is called for each (in the NATS
	// callback goroutine).
	onMessage func(natsMessage)
}

// recordNATS connects to the stack's NATS as a router (natsuser.Router) and records
// until the test ends.
func recordNATS(t *testing.T, n *devstack.NATS) *natsRecorder {
	t.Helper()
	nc, err := n.Connect(natsuser.Router, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	r := &natsRecorder{}
	for _, subject := range []string{router.SubjectRegister, router.SubjectUnregister} {
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
			nm := natsMessage{Subject: m.Subject, At: time.Now(), Raw: append([]byte(nil), m.Data...)}
			if err := json.Unmarshal(m.Data, &nm.Msg); err != nil {
				t.Errorf("%s: undecodable message %s: %v", m.Subject, m.Data, err)
				return
			}
			r.mu.Lock()
			r.messages = append(r.messages, nm)
			hook := r.onMessage
			r.mu.Unlock()
			if hook != nil {
				hook(nm)
			}
		})
		require.NoError(t, err)
		require.NoError(t, sub.SetPendingLimits(-1, -1))
	}
	require.NoError(t, nc.Flush())
	return r
}

// setHook sets onMessage.
func (r *natsRecorder) setHook(f func(natsMessage)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onMessage = f
}

// all returns the messages so far.
func (r *natsRecorder) all() []natsMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]natsMessage(nil), r.messages...)
}

// first returns the first message on subject for uri and address, or false.
func (r *natsRecorder) first(subject, uri, address string) (natsMessage, bool) {
	for _, m := range r.all() {
		if m.Subject == subject && hasURI(m.Msg, uri) && messageAddress(m.Msg) == address {
			return m, true
		}
	}
	return natsMessage{}, false
}

// waitFirst waits until a message on subject for uri and address arrived and returns the first.
func (r *natsRecorder) waitFirst(t *testing.T, subject, uri, address string, wait time.Duration) natsMessage {
	t.Helper()
	var m natsMessage
	ok := false
	deadline := time.Now().Add(wait)
	for !ok {
		if m, ok = r.first(subject, uri, address); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s of %s for %s within %s; saw:\n%s", subject, uri, address, wait, r.describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return m
}

func (r *natsRecorder) describe() string {
	var b strings.Builder
	for _, m := range r.all() {
		fmt.Fprintf(&b, "  %s %s %s\n", m.At.Format("15:04:05.000"), m.Subject, m.Raw)
	}
	return b.String()
}

func hasURI(m router.RegistryMessage, uri string) bool {
	for _, u := range m.URIs {
		if router.NormalizeURI(u) == uri {
			return true
		}
	}
	return false
}

// messageAddress is host:port of a registry message (the TLS port when set).
func messageAddress(m router.RegistryMessage) string {
	port := m.Port
	if m.TLSPort != 0 {
		port = m.TLSPort
	}
	return net.JoinHostPort(m.Host, strconv.Itoa(int(port)))
}

// instanceAddress is host:port where the routers reach the instance's containerPort.
func instanceAddress(t *testing.T, a *modelsv1.ActualLRP, containerPort uint32) string {
	t.Helper()
	for _, p := range a.GetNetInfo().GetPorts() {
		if p.GetContainerPort() == containerPort {
			return net.JoinHostPort(a.GetNetInfo().GetAddress(), strconv.Itoa(int(p.GetHostPort())))
		}
	}
	t.Fatalf("instance %d has no host port for %d: %v", a.GetIndex(), containerPort, a.GetNetInfo())
	return ""
}

// routeTable is URI → sorted addresses.
type routeTable map[string][]string

func (rt routeTable) String() string {
	uris := make([]string, 0, len(rt))
	for u := range rt {
		uris = append(uris, u)
	}
	sort.Strings(uris)
	var b strings.Builder
	for _, u := range uris {
		fmt.Fprintf(&b, "  %s → %s\n", u, strings.Join(rt[u], ", "))
	}
	return b.String()
}

// routerTable fetches the stand-in router's table.
func (rs *routedStack) routerTable(t *testing.T) routeTable {
	t.Helper()
	routes, err := rs.Router.Routes(t.Context())
	require.NoError(t, err)
	out := routeTable{}
	for uri, eps := range routes {
		for _, ep := range eps {
			out[uri] = append(out[uri], ep.Address)
		}
		sort.Strings(out[uri])
	}
	return out
}

// expectedTable is what the routers should hold according to the BBS: for every
// desired LRP's cf-router route, the addresses of its RUNNING instances' port.
func (rs *routedStack) expectedTable(t *testing.T) routeTable {
	t.Helper()
	desired, err := rs.bbs.ListDesiredLRPs(callCtx(t), &bbsv1.ListDesiredLRPsRequest{})
	require.NoError(t, err)
	out := routeTable{}
	for _, d := range desired.GetDesiredLrps() {
		raw, err := json.Marshal(d.GetRoutes()["cf-router"])
		require.NoError(t, err)
		var routes []struct {
			Hostnames []string `json:"hostnames"`
			Port      uint32   `json:"port"`
		}
		if string(raw) != "null" {
			require.NoError(t, json.Unmarshal(raw, &routes))
		}
		actuals := rs.actuals(t, d.GetProcessGuid())
		for _, r := range routes {
			for _, a := range actuals {
				if a.GetState() != modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING || a.GetIndex() >= d.GetInstances() {
					continue
				}
				for _, h := range r.Hostnames {
					uri := router.NormalizeURI(h)
					out[uri] = append(out[uri], instanceAddress(t, a, r.Port))
				}
			}
		}
	}
	for uri := range out {
		sort.Strings(out[uri])
	}
	return out
}

// waitRouterTable polls the router until its table equals want; it returns how long
// that took and fails with both tables after wait.
func (rs *routedStack) waitRouterTable(t *testing.T, want func() routeTable, wait time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	var got, exp routeTable
	for {
		got, exp = rs.routerTable(t), want()
		if fmt.Sprint(got) == fmt.Sprint(exp) {
			return time.Since(start)
		}
		if time.Since(start) > wait {
			t.Fatalf("%s: the router's table is not the expected one within %s\nrouter:\n%sexpected:\n%s", what, wait, got, exp)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getThroughRouter sends GET / with Host hostname through the stand-in router.
func (rs *routedStack) getThroughRouter(hostname string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, rs.Router.URL()+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = hostname
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// scale sets guid's instances.
func (rs *routedStack) scale(t *testing.T, guid string, instances int32) {
	t.Helper()
	_, err := rs.bbs.UpdateDesiredLRP(callCtx(t), &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: &modelsv1.DesiredLRPUpdate{Instances: &instances}})
	require.NoError(t, err)
}

// reroute replaces guid's routes with a cf-router route of hostname.
func (rs *routedStack) reroute(t *testing.T, guid, hostname string) {
	t.Helper()
	_, err := rs.bbs.UpdateDesiredLRP(callCtx(t), &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: guid,
		Update: &modelsv1.DesiredLRPUpdate{Routes: cfRouterRoutes(t, httpPort, hostname)}})
	require.NoError(t, err)
}
