package firewall

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/google/nftables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestFirewall makes a firewall for n's bridge in its own table; the table goes at
// cleanup.
func newTestFirewall(t *testing.T, n *testNet, stateDir string, defaults []*modelsv1.EgressRule) *Firewall {
	t.Helper()
	f, err := New(Config{Table: "drover-test-" + n.id, Bridge: n.bridge, StateDir: stateDir, DefaultRules: defaults}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Delete() })
	return f
}

// tableChains lists the chains of the named inet table (none when it is gone).
func tableChains(t *testing.T, table string) []string {
	t.Helper()
	c, err := nftables.New()
	require.NoError(t, err)
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	require.NoError(t, err)
	var out []string
	for _, ch := range chains {
		if ch.Table.Name == table {
			out = append(out, ch.Name)
		}
	}
	return out
}

// mapKeys lists the addresses in the table's container map.
func mapKeys(t *testing.T, table string) []string {
	t.Helper()
	c, err := nftables.New()
	require.NoError(t, err)
	tbl := &nftables.Table{Family: nftables.TableFamilyINet, Name: table}
	set, err := c.GetSetByName(tbl, mapName)
	require.NoError(t, err)
	elems, err := c.GetSetElements(set)
	require.NoError(t, err)
	var out []string
	for _, e := range elems {
		a, _ := netip.AddrFromSlice(e.Key)
		out = append(out, a.String())
	}
	return out
}

func tcp(dests []string, ports ...uint32) *modelsv1.EgressRule {
	return &modelsv1.EgressRule{Protocol: "tcp", Destinations: dests, Ports: ports}
}

func TestEgress(t *testing.T) {
	n := newTestNet(t)
	target := func(port int) string { return fmt.Sprintf("%s:%d", n.targetIP, port) }
	for _, p := range []int{8001, 8002, 8003, 8004} {
		serveTCP(t, n.targetNS, target(p))
	}
	serveUDP(t, n.targetNS, target(9001))
	serveTCP(t, "", n.gwIP+":8009") // a service of the host, on the bridge's address

	// Before any firewall: the test network works.
	require.True(t, probeTCP(n.ctrNS, target(8001)), "the test network must work without a firewall")
	require.True(t, probeTCP(n.ctrNS, n.gwIP+":8009"), "the test network must work without a firewall")
	f := newTestFirewall(t, n, t.TempDir(), nil)

	type expect struct {
		tcp  map[int]bool
		udp  bool
		ping bool
		host bool
	}
	check := func(t *testing.T, want expect) {
		t.Helper()
		// Probes run at once: a refused one may take seconds (ping, udp wait for answers).
		type probe struct {
			what string
			want bool
			run  func() bool
		}
		probes := []probe{
			{"udp 9001", want.udp, func() bool { return probeUDP(n.ctrNS, target(9001)) }},
			{"ping", want.ping, func() bool { return ping(n.ctrNS, n.targetIP) }},
			{"host service", want.host, func() bool { return probeTCP(n.ctrNS, n.gwIP+":8009") }},
		}
		for port, ok := range want.tcp {
			probes = append(probes, probe{fmt.Sprintf("tcp %d", port), ok, func() bool { return probeTCP(n.ctrNS, target(port)) }})
		}
		got := make([]bool, len(probes))
		var wg sync.WaitGroup
		for i, p := range probes {
			wg.Add(1)
			go func() { defer wg.Done(); got[i] = p.run() }()
		}
		wg.Wait()
		for i, p := range probes {
			assert.Equal(t, p.want, got[i], p.what)
		}
	}
	closed := map[int]bool{8001: false, 8002: false, 8003: false, 8004: false}
	tIP := []string{n.targetIP}
	cases := []struct {
		name  string
		rules []*modelsv1.EgressRule
		want  expect
	}{
		{"no rules reach nothing", nil, expect{tcp: closed}},
		{"tcp ports open exactly those ports", []*modelsv1.EgressRule{tcp(tIP, 8001, 8003)},
			expect{tcp: map[int]bool{8001: true, 8002: false, 8003: true, 8004: false}}},
		{"tcp port range to a CIDR", []*modelsv1.EgressRule{{Protocol: "tcp", Destinations: []string{n.targetNet}, PortRange: &modelsv1.PortRange{Start: 8002, End: 8003}}},
			expect{tcp: map[int]bool{8001: false, 8002: true, 8003: true, 8004: false}}},
		{"address range holding the target", []*modelsv1.EgressRule{tcp([]string{fmt.Sprintf("10.232.%d.1-10.232.%d.2", n.octet, n.octet)}, 8004)},
			expect{tcp: map[int]bool{8001: false, 8004: true}}},
		{"address range beside the target", []*modelsv1.EgressRule{tcp([]string{fmt.Sprintf("10.232.%d.3-10.232.%d.9", n.octet, n.octet)}, 8004)},
			expect{tcp: map[int]bool{8004: false}}},
		{"udp", []*modelsv1.EgressRule{{Protocol: "udp", Destinations: tIP, Ports: []uint32{9001}}},
			expect{tcp: closed, udp: true}},
		{"icmp echo request", []*modelsv1.EgressRule{{Protocol: "icmp", Destinations: tIP, IcmpInfo: &modelsv1.ICMPInfo{Type: i32(8), Code: i32(0)}}},
			expect{tcp: closed, ping: true}},
		{"icmp of another type", []*modelsv1.EgressRule{{Protocol: "icmp", Destinations: tIP, IcmpInfo: &modelsv1.ICMPInfo{Type: i32(13), Code: i32(0)}}},
			expect{tcp: closed}},
		{"all", []*modelsv1.EgressRule{{Protocol: "all", Destinations: tIP}},
			expect{tcp: map[int]bool{8001: true, 8002: true, 8003: true, 8004: true}, udp: true, ping: true}},
		{"host only through a rule", []*modelsv1.EgressRule{tcp([]string{n.gwIP}, 8009)},
			expect{tcp: closed, host: true}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, f.Apply(fmt.Sprintf("ctr-%s-%d", n.id, i), n.ctrIP, tc.rules))
			check(t, tc.want)
		})
	}
	// Each Apply for the same address replaced the previous container's chain.
	assert.Len(t, f.Guids(), 1)
	assert.ElementsMatch(t, []string{forwardChain, inputChain, ChainName(fmt.Sprintf("ctr-%s-%d", n.id, len(cases)-1))}, tableChains(t, f.cfg.Table))

	t.Run("removed container leaves nothing and its address reaches nothing", func(t *testing.T) {
		require.NoError(t, f.Apply("gone-"+n.id, n.ctrIP, []*modelsv1.EgressRule{tcp(tIP, 8002)}))
		require.NoError(t, f.Apply("gone-"+n.id, n.ctrIP, []*modelsv1.EgressRule{{Protocol: "all", Destinations: tIP}}), "applying again replaces the rules")
		require.True(t, probeTCP(n.ctrNS, target(8001)))
		require.NoError(t, f.Remove("gone-"+n.id))
		require.NoError(t, f.Remove("gone-"+n.id), "removing twice is fine")
		assert.ElementsMatch(t, []string{forwardChain, inputChain}, tableChains(t, f.cfg.Table))
		assert.Empty(t, mapKeys(t, f.cfg.Table))
		assert.False(t, probeTCP(n.ctrNS, target(8001)), "an unknown source on the bridge is rejected")
	})
}

func TestEgressDefaultsAndLog(t *testing.T) {
	n := newTestNet(t)
	tIP := []string{n.targetIP}
	f := newTestFirewall(t, n, t.TempDir(), []*modelsv1.EgressRule{tcp(tIP, 8005)})
	target := func(port int) string { return fmt.Sprintf("%s:%d", n.targetIP, port) }
	serveTCP(t, n.targetNS, target(8005))
	serveTCP(t, n.targetNS, target(8006))

	guid := "log-" + n.id
	require.NoError(t, f.Apply(guid, n.ctrIP, nil))
	assert.True(t, probeTCP(n.ctrNS, target(8005)), "the cell's default rule applies")
	assert.False(t, probeTCP(n.ctrNS, target(8006)))

	// Two overlapping rules: the last takes precedence, so its log flag decides.
	quiet := "quiet-" + n.id
	require.NoError(t, f.Apply(quiet, n.ctrIP, []*modelsv1.EgressRule{
		{Protocol: "tcp", Destinations: tIP, Ports: []uint32{8006}, Log: true},
		{Protocol: "all", Destinations: []string{n.targetNet}},
	}))
	require.True(t, probeTCP(n.ctrNS, target(8006)))
	loud := "loud-" + n.id
	require.NoError(t, f.Apply(loud, n.ctrIP, []*modelsv1.EgressRule{
		{Protocol: "all", Destinations: []string{n.targetNet}},
		{Protocol: "tcp", Destinations: tIP, Ports: []uint32{8006}, Log: true},
	}))
	require.True(t, probeTCP(n.ctrNS, target(8006)))
	waitFor(t, "a kernel log line prefixed with the guid", 10*time.Second, func() bool {
		return strings.Contains(kernelLog(t), loud+" IN="+n.bridge)
	})
	line := ""
	for _, l := range strings.Split(kernelLog(t), "\n") {
		if strings.Contains(l, loud+" IN=") {
			line = l
		}
	}
	assert.Contains(t, line, "DST="+n.targetIP)
	assert.Contains(t, line, "DPT=8006")
	assert.NotContains(t, kernelLog(t), quiet+" IN=", "the later rule without log took precedence")
}

func TestEgressRestore(t *testing.T) {
	n := newTestNet(t)
	state := t.TempDir()
	f := newTestFirewall(t, n, state, nil)
	target := fmt.Sprintf("%s:%d", n.targetIP, 8007)
	serveTCP(t, n.targetNS, target)
	kept, stale := "kept-"+n.id, "stale-"+n.id
	require.NoError(t, f.Apply(kept, n.ctrIP, []*modelsv1.EgressRule{tcp([]string{n.targetIP}, 8007)}))
	require.NoError(t, f.Apply(stale, fmt.Sprintf("10.231.%d.77", n.octet), []*modelsv1.EgressRule{tcp([]string{n.targetIP}, 8007)}))
	require.True(t, probeTCP(n.ctrNS, target))

	// Someone flushes the container's chain by hand; a restarted firewall puts it back.
	c, err := nftables.New()
	require.NoError(t, err)
	c.FlushChain(&nftables.Chain{Table: &nftables.Table{Family: nftables.TableFamilyINet, Name: f.cfg.Table}, Name: ChainName(kept)})
	require.NoError(t, c.Flush())
	require.False(t, probeTCP(n.ctrNS, target), "an empty chain returns to the base chain, which rejects")

	f2, err := New(f.cfg, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{kept, stale}, f2.Guids())
	require.NoError(t, f2.Restore(func(g string) bool { return g == kept }))
	assert.Equal(t, []string{kept}, f2.Guids())
	chains := tableChains(t, f.cfg.Table)
	assert.ElementsMatch(t, []string{forwardChain, inputChain, ChainName(kept)}, chains)
	assert.Equal(t, []string{n.ctrIP}, mapKeys(t, f.cfg.Table))
	assert.True(t, probeTCP(n.ctrNS, target))
	assert.False(t, probeTCP(n.ctrNS, fmt.Sprintf("%s:%d", n.targetIP, 8008)))

	// A third instance sees only the kept record.
	f3, err := New(f.cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{kept}, f3.Guids())
	require.NoError(t, f3.Delete())
	assert.Empty(t, tableChains(t, f.cfg.Table))
}

func TestEgressTwoCellsDoNotClash(t *testing.T) {
	n := newTestNet(t)
	a := newTestFirewall(t, n, t.TempDir(), nil)
	b, err := New(Config{Table: "drover-test2-" + n.id, Bridge: "fwx" + n.id, StateDir: t.TempDir()}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Delete() })
	require.NoError(t, a.Apply("a-"+n.id, n.ctrIP, nil))
	require.NoError(t, b.Apply("b-"+n.id, n.ctrIP, nil))
	require.NoError(t, b.Delete())
	assert.True(t, slices.Contains(tableChains(t, a.cfg.Table), ChainName("a-"+n.id)))
}

func TestApplyRefusesBadInput(t *testing.T) {
	requireRoot(t)
	id := randomID(t)
	f, err := New(Config{Table: "drover-test-" + id, Bridge: "fwb" + id, StateDir: t.TempDir()}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Delete() })
	assert.ErrorContains(t, f.Apply("bad guid", "10.0.0.2", nil), "guid")
	assert.ErrorContains(t, f.Apply("g", "fe80::1", nil), "not IPv4")
	err = f.Apply("g", "10.0.0.2", []*modelsv1.EgressRule{{Protocol: "icmpv6", Destinations: []string{"1.1.1.1"}}})
	assert.ErrorContains(t, err, "egress_rules[0].protocol")
	assert.Empty(t, f.Guids(), "bad input changes nothing")

	_, err = New(Config{Table: "bad table", Bridge: "this-is-too-long-for-a-bridge", StateDir: "rel",
		DefaultRules: []*modelsv1.EgressRule{{Protocol: "udp", Destinations: []string{"1.1.1.1"}}}}, nil)
	require.Error(t, err)
	for _, w := range []string{"table", "bridge", "state_dir", "default_egress_rules[0].ports"} {
		assert.Contains(t, err.Error(), w)
	}
}

// BenchmarkEgressApply measures one container's rule setup (20 rules, one atomic batch)
// on a table of its own; no traffic is sent.
func BenchmarkEgressApply(b *testing.B) {
	requireRoot(b)
	id := randomID(b)
	f, err := New(Config{Table: "drover-bench-" + id, Bridge: "fwb" + id, StateDir: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Delete() })
	rules := make([]*modelsv1.EgressRule, 20)
	for i := range rules {
		rules[i] = tcp([]string{fmt.Sprintf("10.233.%d.0/24", i)}, 80, 443)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		ip := fmt.Sprintf("10.234.%d.%d", (i/250)%250, i%250+2)
		if err := f.Apply(fmt.Sprintf("bench-%d", i), ip, rules); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/container")
	b.Logf("%d containers with 20 egress rules each: %s per container setup", b.N, time.Since(start)/time.Duration(b.N))
}

func TestLeftoversAndDeleteTable(t *testing.T) {
	requireRoot(t)
	id := randomID(t)
	f, err := New(Config{Table: "drover-test-" + id, Bridge: "fwb" + id, StateDir: t.TempDir()}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Delete() })
	none, err := Leftovers(f.cfg.Table)
	require.NoError(t, err)
	assert.Empty(t, none)
	require.NoError(t, f.Apply("left-"+id, "10.235.0.2", nil))
	left, err := Leftovers(f.cfg.Table)
	require.NoError(t, err)
	assert.Equal(t, []string{"nftables chain inet " + f.cfg.Table + " ctr-left-" + id}, left)
	require.NoError(t, DeleteTable(f.cfg.Table))
	require.NoError(t, DeleteTable(f.cfg.Table), "a missing table is fine")
	assert.Empty(t, tableChains(t, f.cfg.Table))
}
