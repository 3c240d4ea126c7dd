package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	convergerconfig "drover.dev/converger/config"
	"drover.dev/devstack"
	"drover.dev/devstack/devstacktest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// multiHostWait bounds the waits of the multi-host scenario that cross the test network
// (routes reaching the router, healing after a host is lost).
const multiHostWait = 60 * time.Second

// TestMultiHost (issue 16, acceptance 4): with 3 cell hosts, the control host (Postgres,
// BBS, auctioneer, converger, route-emitter, fileserver), the router host (NATS, the
// stand-in router) and a client host, each a network namespace with its own address on
// the test network, an LRP of 6 instances with a route runs 2 per cell, each
// ActualLRP's address is its cell's address, the client reaches every instance at
// cell-ip:host-port and through the router, and the route-emitter's table names only
// cell addresses. Then cell-3's rep is killed (-9) and its host removed from the
// network: all 6 instances heal onto cell-1 and cell-2 and answer through the router
// again. No ActualLRP, route or written configuration names 127.0.0.1.
func TestMultiHost(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{
		Hosts:              3,
		ConfigureRep:       fastPresence,
		ConfigureConverger: func(*convergerconfig.Config) {},
		Routing:            &devstacktest.RoutingOptions{},
		Fileserver:         true,
	})
	rs := &routedStack{cellStack: &cellStack{Stack: s, bbs: devstacktest.Client(t, s, 0)}}
	n := s.Hosts
	require.NotNil(t, n, "a multi-host stack has a test network")
	cellIPs := map[string]string{}
	for _, r := range s.Reps {
		h := n.Host(r.CellID())
		require.NotNil(t, h, "cell %s has a host", r.CellID())
		cellIPs[r.CellID()] = h.IP
		require.Equal(t, h.IP, r.Config.Executor.ExternalIP, "%s publishes host ports on its host's address", r.Name)
		require.Equal(t, h.Netns, r.Netns, "%s runs on its cell's host", r.Name)
	}
	requireHostsPlaced(t, s)
	left, err := devstack.ConfigLoopbacks(s)
	require.NoError(t, err)
	require.Empty(t, left, "the written configurations name no 127.0.0.1")

	const guid, hostname, instances = "multihost-app", "multihost.example.com", 6
	rs.desire(t, routedLRP(t, guid, hostname, instances))
	running := runningValues(rs.waitRunning(t, guid, instances))
	require.Equal(t, map[string]int{"cell-1": 2, "cell-2": 2, "cell-3": 2}, countByCell(running), "2 instances per cell")
	requireOnCellAddresses(t, running, cellIPs)

	requireCellNetworksOnTheirHosts(t, s)

	client := *n.Host(devstack.HostClient)
	for _, a := range running {
		requireIndexFromHost(t, client, a)
	}
	requireEveryIndexThroughRouter(t, client, s.Router.URL(), hostname, instances)
	requireEmitterTable(t, s, guid, cellIPs, instances)

	// cell-3 disappears: its rep dies and its host leaves the network.
	victim := s.Rep("cell-3")
	require.NotNil(t, victim)
	require.NoError(t, victim.Kill(ctxFor(t, settleWait)))
	require.NoError(t, n.RemoveHost(t.Context(), "cell-3"))
	lost := time.Now()
	survivors := map[string]string{"cell-1": cellIPs["cell-1"], "cell-2": cellIPs["cell-2"]}
	final := rs.waitActuals(t, guid, multiHostWait, "all instances RUNNING on cell-1 and cell-2", func(as []*modelsv1.ActualLRP) bool {
		for _, a := range as {
			if _, ok := survivors[a.GetCellId()]; !ok {
				return false
			}
		}
		return len(as) == instances && ordinaryRunning(as) == instances
	})
	t.Logf("healed onto cell-1 and cell-2 in %s: %v", time.Since(lost).Round(time.Millisecond), countByCell(final))
	requireOnCellAddresses(t, final, survivors)
	requireEveryIndexThroughRouter(t, client, s.Router.URL(), hostname, instances)
	requireEmitterTable(t, s, guid, survivors, instances)
}

// requireHostsPlaced checks that every service runs on a test host and that the BBS,
// auctioneer, route-emitter and router listen on their hosts' addresses.
func requireHostsPlaced(t *testing.T, s *devstack.Stack) {
	t.Helper()
	control, router := s.Hosts.Host(devstack.HostControl), s.Hosts.Host(devstack.HostRouter)
	for _, svc := range s.Services() {
		require.NotEmpty(t, svc.Netns, "%s runs on a test host", svc.Name)
	}
	for what, addr := range map[string]string{
		"bbs":           s.BBS[0].GRPCAddress(),
		"auctioneer":    s.Auctioneer.Address(),
		"route-emitter": s.RouteEmitter.Address(),
		"fileserver":    s.Fileserver.Config.ServerAddress,
	} {
		host, _, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		require.Equal(t, control.IP, host, "%s listens on the control host", what)
	}
	host, _, err := net.SplitHostPort(s.Router.Config.ListenAddress)
	require.NoError(t, err)
	require.Equal(t, router.IP, host, "the router listens on the router host")
	require.Contains(t, s.NATS.URL, router.IP, "NATS runs on the router host")
	require.Contains(t, s.DatabaseURL, control.IP, "Postgres listens on the control host")

	// The certificates name the hosts' addresses, not 127.0.0.1.
	certIPs := func(file string) []string {
		pemData, err := os.ReadFile(file)
		require.NoError(t, err)
		block, _ := pem.Decode(pemData)
		require.NotNil(t, block, file)
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		var ips []string
		for _, ip := range cert.IPAddresses {
			ips = append(ips, ip.String())
		}
		return ips
	}
	require.Equal(t, []string{control.IP}, certIPs(s.Certs.Server().CertFile), "the BBS certificate")
	require.Equal(t, []string{control.IP}, certIPs(s.Certs.Auctioneer().CertFile), "the auctioneer certificate")
	for _, r := range s.Reps {
		require.Equal(t, []string{s.Hosts.Host(r.CellID()).IP}, certIPs(r.Config.TLS.CertFile), "%s's certificate", r.Name)
	}
}

// requireCellNetworksOnTheirHosts requires each cell's CNI bridge and NAT rules (made
// by the CNI plugins its rep runs) to be in its cell host's namespace and not in the
// root namespace.
func requireCellNetworksOnTheirHosts(t *testing.T, s *devstack.Stack) {
	t.Helper()
	rootNAT, err := exec.Command("iptables-save", "-t", "nat").Output()
	require.NoError(t, err)
	for _, r := range s.Reps {
		e := r.Config.Executor
		require.NoError(t, exec.Command("ip", "-n", r.Netns, "link", "show", "dev", e.BridgeName).Run(), "%s's bridge %s is on its host", r.Name, e.BridgeName)
		require.Error(t, exec.Command("ip", "link", "show", "dev", e.BridgeName).Run(), "%s's bridge %s is not in the root namespace", r.Name, e.BridgeName)
		nat, err := exec.Command("nsenter", "--net="+devstack.NetnsPath(r.Netns), "--", "iptables-save", "-t", "nat").Output()
		require.NoError(t, err)
		require.Contains(t, string(nat), e.Subnet, "%s's NAT rules are on its host", r.Name)
		require.Contains(t, string(nat), e.ExternalIP, "%s's host ports are published on its host's address", r.Name)
		require.NotContains(t, string(rootNAT), e.Subnet, "%s's NAT rules are not in the root namespace", r.Name)
	}
}

// requireOnCellAddresses requires every instance's address to be its cell's.
func requireOnCellAddresses(t *testing.T, as []*modelsv1.ActualLRP, cellIPs map[string]string) {
	t.Helper()
	for _, a := range as {
		addr := a.GetNetInfo().GetAddress()
		require.NotEqual(t, "127.0.0.1", addr, "instance %d", a.GetIndex())
		require.Equal(t, cellIPs[a.GetCellId()], addr, "instance %d on %s has its cell's address", a.GetIndex(), a.GetCellId())
		require.NotContains(t, a.GetNetInfo().GetInstanceAddress(), "127.0.0.1", "instance %d", a.GetIndex())
	}
}

// requireIndexFromHost requires the instance to answer with its index at
// cell-ip:host-port, from the test host h.
func requireIndexFromHost(t *testing.T, h devstack.Host, a *modelsv1.ActualLRP) {
	t.Helper()
	url := hostURL(t, a, httpPort)
	c := h.HTTPClient(5 * time.Second)
	var body string
	var err error
	require.Eventually(t, func() bool {
		body, err = getBody(c, url, "")
		return err == nil
	}, settleWait, cellPoll, "instance %d at %s from %s: %v", a.GetIndex(), url, h.Name, err)
	require.Equal(t, "index="+strconv.Itoa(int(a.GetIndex())), body, "instance %d at %s", a.GetIndex(), url)
}

// requireEveryIndexThroughRouter sends requests for hostname through the router from
// the test host h until every index 0..instances-1 has answered.
func requireEveryIndexThroughRouter(t *testing.T, h devstack.Host, routerURL, hostname string, instances int) {
	t.Helper()
	c := h.HTTPClient(5 * time.Second)
	seen := map[string]bool{}
	var lastErr error
	deadline := time.Now().Add(multiHostWait)
	for len(seen) < instances {
		body, err := getBody(c, routerURL+"/", hostname)
		if err == nil {
			seen[body] = true
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("through the router from %s within %s, only %v answered (last error: %v)", h.Name, multiHostWait, seen, lastErr)
		}
		if err != nil {
			time.Sleep(cellPoll)
		}
	}
	for i := range instances {
		require.True(t, seen["index="+strconv.Itoa(i)], "index %d answered through the router: %v", i, seen)
	}
}

// requireEmitterTable waits until the route-emitter's table holds exactly instances
// endpoints for guid, each on a cell address of cellIPs, and none on 127.0.0.1.
func requireEmitterTable(t *testing.T, s *devstack.Stack, guid string, cellIPs map[string]string, instances int) {
	t.Helper()
	allowed := map[string]bool{}
	for _, ip := range cellIPs {
		allowed[ip] = true
	}
	var last string
	deadline := time.Now().Add(multiHostWait)
	for {
		resp, err := s.RouteEmitter.ListRoutes(t.Context(), &routeemitterv1.ListRoutesRequest{})
		if err == nil {
			var endpoints []string
			count, ok := 0, true
			for _, r := range resp.GetRoutes() {
				for _, ep := range r.GetEndpoints() {
					endpoints = append(endpoints, fmt.Sprintf("%s/%d@%s:%d", r.GetProcessGuid(), ep.GetIndex(), ep.GetHost(), ep.GetPort()))
					require.NotEqual(t, "127.0.0.1", ep.GetHost(), "route-emitter endpoint of %s", r.GetHostname())
					if r.GetProcessGuid() == guid {
						count++
					}
					ok = ok && allowed[ep.GetHost()]
				}
			}
			if ok && count == instances {
				return
			}
			last = strings.Join(endpoints, ", ")
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the route-emitter's table does not name %d endpoints of %s on %v only within %s; last: %s", instances, guid, cellIPs, multiHostWait, last)
		}
		time.Sleep(cellPoll)
	}
}

// getBody GETs url with the Host header host (when set) and returns the trimmed body of
// a 200 answer.
func getBody(c *http.Client, url, host string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return strings.TrimSpace(string(body)), nil
}
