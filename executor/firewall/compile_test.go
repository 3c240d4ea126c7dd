package firewall

import (
	"net/netip"
	"testing"

	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

var ctrIP = netip.MustParseAddr("10.1.0.2")

func daddrEq(ip string) []expr.Any {
	a := netip.MustParseAddr(ip).As4()
	return []expr.Any{isIPv4(), isIPv4Cmp(), ipv4Field(16), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]}}
}

func proto(n byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{n}}}
}

func cat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(a string) []AddrRange {
	ip := netip.MustParseAddr(a)
	return []AddrRange{{ip, ip}}
}

func TestCompileNoRulesDeniesAll(t *testing.T) {
	got, err := Compile("g", ctrIP, nil)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, acceptReplies(), got[0])
	assert.Equal(t, cat(daddrEq("10.1.0.2"), []expr.Any{accept()}), got[1], "a container reaches itself")
	assert.Equal(t, []expr.Any{reject()}, got[2])
}

func TestCompileLastRuleFirst(t *testing.T) {
	rules := []Rule{
		{Protocol: ProtoTCP, Destinations: one("1.1.1.1"), Ports: []uint16{80, 443}, Log: true},
		{Protocol: ProtoUDP, Destinations: []AddrRange{{netip.MustParseAddr("2.0.0.0"), netip.MustParseAddr("2.0.0.9")}}, PortStart: 53, PortEnd: 54},
		{Protocol: ProtoICMP, Destinations: one("3.3.3.3"), ICMPType: 8},
		{Protocol: ProtoAll, Destinations: []AddrRange{{netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("255.255.255.255")}, one("4.4.4.4")[0]}},
	}
	got, err := Compile("guid-1", ctrIP, rules)
	require.NoError(t, err)
	body := got[2 : len(got)-1]
	require.Len(t, body, 8)
	// all: everywhere (no match at all), then 4.4.4.4
	assert.Equal(t, []expr.Any{accept()}, body[0])
	assert.Equal(t, cat(daddrEq("4.4.4.4"), []expr.Any{accept()}), body[1])
	// icmp type 8 code 0
	assert.Equal(t, cat(proto(unix.IPPROTO_ICMP), daddrEq("3.3.3.3"), []expr.Any{
		transport(0, 1), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{8}},
		transport(1, 1), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0}},
		accept()}), body[2])
	// udp range to an address range
	assert.Equal(t, cat(proto(unix.IPPROTO_UDP), []expr.Any{
		isIPv4(), isIPv4Cmp(), ipv4Field(16), &expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{2, 0, 0, 0}, ToData: []byte{2, 0, 0, 9}},
		transport(2, 2), &expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{0, 53}, ToData: []byte{0, 54}},
		accept()}), body[3])
	// tcp: per port, a rate-limited log line with the guid, then the accept
	log := &expr.Log{Key: 1<<unix.NFTA_LOG_PREFIX | 1<<unix.NFTA_LOG_LEVEL, Level: expr.LogLevelWarning, Data: []byte("guid-1 ")}
	limit := &expr.Limit{Type: expr.LimitTypePkts, Rate: 20, Unit: expr.LimitTimeSecond, Burst: 50}
	for i, port := range []uint16{80, 443} {
		match := cat(proto(unix.IPPROTO_TCP), daddrEq("1.1.1.1"), []expr.Any{
			transport(2, 2), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)}})
		assert.Equal(t, cat(match, []expr.Any{limit, log}), body[4+2*i])
		assert.Equal(t, cat(match, []expr.Any{accept()}), body[5+2*i])
	}
}

func TestCompileSinglePortRangeIsACompare(t *testing.T) {
	got, err := Compile("g", ctrIP, []Rule{{Protocol: ProtoTCP, Destinations: one("1.1.1.1"), PortStart: 22, PortEnd: 22}})
	require.NoError(t, err)
	assert.Equal(t, cat(proto(unix.IPPROTO_TCP), daddrEq("1.1.1.1"), []expr.Any{
		transport(2, 2), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0, 22}}, accept()}), got[2])
}

func TestCompileBounds(t *testing.T) {
	_, err := Compile("g", netip.MustParseAddr("::1"), nil)
	require.ErrorContains(t, err, "not IPv4")
	ports := make([]uint16, 1000)
	dests := make([]AddrRange, 21)
	for i := range dests {
		dests[i] = one("1.1.1.1")[0]
	}
	_, err = Compile("g", ctrIP, []Rule{{Protocol: ProtoTCP, Destinations: dests, Ports: ports}})
	require.ErrorContains(t, err, "more than 20000 firewall rules")
}

func TestLogPrefix(t *testing.T) {
	assert.Equal(t, "abc ", LogPrefix("abc"))
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'a'
	}
	assert.Len(t, LogPrefix(string(long)), maxLogPrefix)
}

func TestDispatch(t *testing.T) {
	got := dispatch("br0", "containers", 7)
	require.Len(t, got, 2)
	iif := []expr.Any{&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname("br0")}}
	assert.Equal(t, cat(iif, []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
		ipv4Field(12), &expr.Lookup{SourceRegister: 1, IsDestRegSet: true, SetName: "containers", SetID: 7}}), got[0])
	assert.Equal(t, cat(iif, []expr.Any{reject()}), got[1])
	assert.Len(t, ifname("br0"), unix.IFNAMSIZ)
}
