package firewall

import (
	"net/netip"
	"strings"
	"testing"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func i32(v int32) *int32 { return &v }

func TestParseValid(t *testing.T) {
	rules, err := Parse("egress_rules", []*modelsv1.EgressRule{
		{Protocol: "tcp", Destinations: []string{"1.2.3.4-2.3.4.5", "10.0.0.0/8", "9.9.9.9", "::1"}, Ports: []uint32{80, 443}, Log: true},
		{Protocol: "udp", Destinations: []string{"1.2.3.4/4"}, PortRange: &modelsv1.PortRange{Start: 8000, End: 8085}},
		{Protocol: "icmp", Destinations: []string{"1.2.3.4"}, IcmpInfo: &modelsv1.ICMPInfo{Type: i32(8), Code: i32(0)}},
		{Protocol: "all", Destinations: []string{"0.0.0.0/0"}},
	})
	require.NoError(t, err)
	require.Len(t, rules, 4)
	a := netip.MustParseAddr
	assert.Equal(t, []AddrRange{{a("1.2.3.4"), a("2.3.4.5")}, {a("10.0.0.0"), a("10.255.255.255")}, {a("9.9.9.9"), a("9.9.9.9")}},
		rules[0].Destinations, "IPv6 destinations are dropped")
	assert.Equal(t, []uint16{80, 443}, rules[0].Ports)
	assert.True(t, rules[0].Log)
	assert.Equal(t, []AddrRange{{a("0.0.0.0"), a("15.255.255.255")}}, rules[1].Destinations, "a CIDR is masked")
	assert.Equal(t, uint16(8000), rules[1].PortStart)
	assert.Equal(t, uint16(8085), rules[1].PortEnd)
	assert.Equal(t, uint8(8), rules[2].ICMPType)
	assert.Equal(t, []AddrRange{{a("0.0.0.0"), a("255.255.255.255")}}, rules[3].Destinations)
}

func TestParseInvalid(t *testing.T) {
	dest := []string{"1.2.3.4"}
	cases := []struct {
		name string
		rule *modelsv1.EgressRule
		want []string
	}{
		{"nil", nil, []string{"r[0]: is required"}},
		{"protocol", &modelsv1.EgressRule{Protocol: "icmpv6", Destinations: dest}, []string{"r[0].protocol: must be one of"}},
		{"tcp without ports", &modelsv1.EgressRule{Protocol: "tcp", Destinations: dest}, []string{"r[0].ports: tcp and udp rules need exactly one"}},
		{"both ports", &modelsv1.EgressRule{Protocol: "udp", Destinations: dest, Ports: []uint32{1}, PortRange: &modelsv1.PortRange{Start: 1, End: 2}}, []string{"exactly one of ports or port_range"}},
		{"port zero", &modelsv1.EgressRule{Protocol: "tcp", Destinations: dest, Ports: []uint32{0, 70000}}, []string{"r[0].ports[0]: must be between", "r[0].ports[1]: must be between"}},
		{"range order", &modelsv1.EgressRule{Protocol: "tcp", Destinations: dest, PortRange: &modelsv1.PortRange{Start: 9, End: 2}}, []string{"r[0].port_range: start must be <= end"}},
		{"range end", &modelsv1.EgressRule{Protocol: "tcp", Destinations: dest, PortRange: &modelsv1.PortRange{Start: 9, End: 70000}}, []string{"r[0].port_range.end"}},
		{"ports for icmp", &modelsv1.EgressRule{Protocol: "icmp", Destinations: dest, Ports: []uint32{1}, IcmpInfo: &modelsv1.ICMPInfo{Type: i32(0), Code: i32(0)}}, []string{"r[0].ports: only allowed for tcp and udp"}},
		{"range for all", &modelsv1.EgressRule{Protocol: "all", Destinations: dest, PortRange: &modelsv1.PortRange{Start: 1, End: 2}}, []string{"r[0].port_range: only allowed"}},
		{"icmp without info", &modelsv1.EgressRule{Protocol: "icmp", Destinations: dest}, []string{"r[0].icmp_info: required for icmp"}},
		{"icmp info for tcp", &modelsv1.EgressRule{Protocol: "tcp", Destinations: dest, Ports: []uint32{1}, IcmpInfo: &modelsv1.ICMPInfo{}}, []string{"r[0].icmp_info: only allowed for icmp"}},
		{"icmp without type and code", &modelsv1.EgressRule{Protocol: "icmp", Destinations: dest, IcmpInfo: &modelsv1.ICMPInfo{}}, []string{"r[0].icmp_info.type: is required", "r[0].icmp_info.code: is required"}},
		{"icmp type too big", &modelsv1.EgressRule{Protocol: "icmp", Destinations: dest, IcmpInfo: &modelsv1.ICMPInfo{Type: i32(256), Code: i32(-1)}}, []string{"r[0].icmp_info.type", "r[0].icmp_info.code"}},
		{"log for udp", &modelsv1.EgressRule{Protocol: "udp", Destinations: dest, Ports: []uint32{53}, Log: true}, []string{"r[0].log: must not be true for udp"}},
		{"log for icmp", &modelsv1.EgressRule{Protocol: "icmp", Destinations: dest, IcmpInfo: &modelsv1.ICMPInfo{Type: i32(0), Code: i32(0)}, Log: true}, []string{"r[0].log: must not be true for icmp"}},
		{"no destination", &modelsv1.EgressRule{Protocol: "all"}, []string{"r[0].destinations: must have at least one"}},
		{"bad destinations", &modelsv1.EgressRule{Protocol: "all", Destinations: []string{"x", "2.0.0.0-1.0.0.0", "1.0.0.0-::1", "1.2.3.4/33", "fe80::1%eth0", ""}},
			[]string{"r[0].destinations[0]", "r[0].destinations[1]", "r[0].destinations[2]", "r[0].destinations[3]", "r[0].destinations[4]", "r[0].destinations[5]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := Parse("r", []*modelsv1.EgressRule{tc.rule})
			require.Error(t, err)
			assert.Nil(t, rules)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseBounds(t *testing.T) {
	_, err := Parse("r", make([]*modelsv1.EgressRule, MaxRules+1))
	require.ErrorContains(t, err, "at most 2000 rules")
	_, err = Parse("r", []*modelsv1.EgressRule{{Protocol: "all", Destinations: make([]string, MaxDestinations+1)}})
	require.ErrorContains(t, err, "r[0].destinations: must have at most")
	_, err = Parse("r", []*modelsv1.EgressRule{{Protocol: "tcp", Destinations: []string{"1.1.1.1"}, Ports: make([]uint32, MaxPorts+1)}})
	require.ErrorContains(t, err, "r[0].ports: must have at most")
}

func TestParseErrorNamesEveryRule(t *testing.T) {
	_, err := Parse("r", []*modelsv1.EgressRule{
		{Protocol: "all", Destinations: []string{"1.1.1.1"}},
		{Protocol: "nope", Destinations: []string{"1.1.1.1"}},
		{Protocol: "all"},
	})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "r[0]")
	assert.True(t, strings.Contains(err.Error(), "r[1].protocol") && strings.Contains(err.Error(), "r[2].destinations"), err.Error())
}

func FuzzParseDestination(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "1.2.3.4-2.3.4.5", "10.0.0.0/8", "::1", "fe80::1%eth0", "1.2.3.4/33", "a-b", "-", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, d string) {
		r, err := parseDestination(d)
		if err != nil {
			return
		}
		if r.From.Is4() != r.To.Is4() || r.From.Compare(r.To) > 0 {
			t.Fatalf("%q parsed to a bad range %v-%v", d, r.From, r.To)
		}
		if r.From.Is4() {
			if _, err := Compile("g", ctrIP, []Rule{{Protocol: ProtoAll, Destinations: []AddrRange{r}}}); err != nil {
				t.Fatalf("%q: %v", d, err)
			}
		}
	})
}
