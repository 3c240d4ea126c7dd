package firewall

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// maxLogPrefix is the longest log prefix the kernel keeps (NF_LOG_PREFIXLEN - 1).
const maxLogPrefix = 127

// l4 protocol numbers.
var protoNumbers = map[string]byte{ProtoTCP: unix.IPPROTO_TCP, ProtoUDP: unix.IPPROTO_UDP, ProtoICMP: unix.IPPROTO_ICMP}

// LogPrefix is the kernel log prefix of a container's logged rules: its guid and a
// space, cut to what the kernel keeps.
func LogPrefix(guid string) string {
	p := guid + " "
	if len(p) > maxLogPrefix {
		p = p[:maxLogPrefix]
	}
	return p
}

// Compile turns a container's rules (cell defaults first, then the container's own) into
// the expressions of its chain, one slice per nftables rule, in order: replies and traffic
// to the container itself (ip, its own address) are accepted, then the rules from the last
// to the first (the last rule takes precedence: the first match accepts, logging first
// at a bounded rate if that rule logs), then everything else is rejected. guid prefixes log lines.
func Compile(guid string, ip netip.Addr, rules []Rule) ([][]expr.Any, error) {
	if !ip.Is4() {
		return nil, fmt.Errorf("firewall: container address %s is not IPv4", ip)
	}
	out := [][]expr.Any{
		acceptReplies(),
		append(matchDaddr(AddrRange{From: ip, To: ip}), accept()),
	}
	prefix := LogPrefix(guid)
	for i := len(rules) - 1; i >= 0; i-- {
		r := rules[i]
		for _, d := range r.Destinations {
			for _, ports := range portMatches(r) {
				exprs := []expr.Any{}
				if n, ok := protoNumbers[r.Protocol]; ok {
					exprs = append(exprs,
						&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
						&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{n}})
				}
				exprs = append(exprs, matchDaddr(d)...)
				exprs = append(exprs, ports...)
				if r.Protocol == ProtoICMP {
					exprs = append(exprs,
						transport(0, 1), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{r.ICMPType}},
						transport(1, 1), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{r.ICMPCode}})
				}
				if r.Log {
					// Logged at a bounded rate (a container must not flood the host's
					// kernel log), then accepted by the next rule, whatever the rate.
					logged := append(append([]expr.Any{}, exprs...), logLimit(), &expr.Log{
						Key:   1<<unix.NFTA_LOG_PREFIX | 1<<unix.NFTA_LOG_LEVEL,
						Level: expr.LogLevelWarning,
						Data:  []byte(prefix),
					})
					out = append(out, logged)
				}
				out = append(out, append(exprs, accept()))
				if len(out) > MaxExpanded {
					return nil, fmt.Errorf("firewall: egress rules expand to more than %d firewall rules (one per destination and port)", MaxExpanded)
				}
			}
		}
	}
	return append(out, []expr.Any{reject()}), nil
}

// Log rate of one logged rule: new connections beyond it are accepted without a line.
const (
	logRatePerSecond = 20
	logBurst         = 50
)

// logLimit passes at most logRatePerSecond packets a second (bursts of logBurst).
func logLimit() *expr.Limit {
	return &expr.Limit{Type: expr.LimitTypePkts, Rate: logRatePerSecond, Unit: expr.LimitTimeSecond, Burst: logBurst}
}

// portMatches is one match per port of a tcp or udp rule (the range as one match), or a
// single empty match for other protocols.
func portMatches(r Rule) [][]expr.Any {
	switch {
	case r.Protocol != ProtoTCP && r.Protocol != ProtoUDP:
		return [][]expr.Any{nil}
	case len(r.Ports) > 0:
		out := make([][]expr.Any, 0, len(r.Ports))
		for _, p := range r.Ports {
			out = append(out, []expr.Any{transport(2, 2), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(p)}})
		}
		return out
	case r.PortStart == r.PortEnd:
		return [][]expr.Any{{transport(2, 2), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(r.PortStart)}}}
	default:
		return [][]expr.Any{{transport(2, 2), &expr.Range{Op: expr.CmpOpEq, Register: 1,
			FromData: binaryutil.BigEndian.PutUint16(r.PortStart), ToData: binaryutil.BigEndian.PutUint16(r.PortEnd)}}}
	}
}

// transport loads len bytes at offset of the transport header into register 1.
func transport(offset, length uint32) *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: offset, Len: length}
}

// ipv4Field loads the IPv4 header's source (offset 12) or destination (16) into register 1.
func ipv4Field(offset uint32) *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4}
}

// matchDaddr matches an IPv4 destination in d: nothing for every address, a compare for
// one, a range otherwise.
func matchDaddr(d AddrRange) []expr.Any {
	from, to := d.From.As4(), d.To.As4()
	switch {
	case from == [4]byte{} && to == [4]byte{255, 255, 255, 255}:
		return nil
	case from == to:
		return []expr.Any{isIPv4(), isIPv4Cmp(), ipv4Field(16), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: from[:]}}
	default:
		return []expr.Any{isIPv4(), isIPv4Cmp(), ipv4Field(16), &expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: from[:], ToData: to[:]}}
	}
}

// isIPv4 and isIPv4Cmp match IPv4 packets: only those reach a container's chain, but with
// the match `nft list` shows "ip daddr" instead of a raw payload offset.
func isIPv4() *expr.Meta { return &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1} }
func isIPv4Cmp() *expr.Cmp {
	return &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}}
}

// acceptReplies accepts packets of established or related connections.
func acceptReplies() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
		accept(),
	}
}

func accept() *expr.Verdict { return &expr.Verdict{Kind: expr.VerdictAccept} }

// reject answers with an ICMP "administratively prohibited" (a TCP connect fails at once
// instead of timing out).
func reject() *expr.Reject {
	return &expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED}
}

// ifname is an interface name as nftables compares it (NUL-padded to IFNAMSIZ).
func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

// dispatch is the base chains' rules: IPv4 from the bridge jumps, by source address,
// to its container's chain through the verdict map mapName; anything else from the bridge
// (unknown sources, IPv6) is rejected.
func dispatch(bridge, mapName string, mapID uint32) [][]expr.Any {
	fromBridge := func() []expr.Any {
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(bridge)},
		}
	}
	return [][]expr.Any{
		append(fromBridge(),
			isIPv4(), isIPv4Cmp(),
			ipv4Field(12),
			&expr.Lookup{SourceRegister: 1, DestRegister: 0, IsDestRegSet: true, SetName: mapName, SetID: mapID}),
		append(fromBridge(), reject()),
	}
}
