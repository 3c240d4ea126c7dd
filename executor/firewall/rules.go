package firewall

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Protocols of an egress rule.
const (
	ProtoTCP  = "tcp"
	ProtoUDP  = "udp"
	ProtoICMP = "icmp"
	ProtoAll  = "all"
)

// Bounds on what one container's rules may expand to.
const (
	// MaxRules is how many rules (cell defaults included) one container may have.
	MaxRules = 2000
	// MaxDestinations is how many destinations one rule may list.
	MaxDestinations = 1000
	// MaxPorts is how many ports one rule may list.
	MaxPorts = 1000
	// MaxExpanded is how many nftables rules one container's chain may hold (one per
	// rule and IPv4 destination).
	MaxExpanded = 20000
)

// Rule is one egress rule, parsed: what the firewall enforces.
type Rule struct {
	Protocol string `json:"protocol"`
	// Destinations are IPv4 address ranges (a single address has From == To). IPv6
	// destinations are dropped: the cell's container network is IPv4 only.
	Destinations []AddrRange `json:"destinations"`
	// Ports, or the range PortStart-PortEnd, for tcp and udp (exactly one is set).
	Ports     []uint16 `json:"ports,omitempty"`
	PortStart uint16   `json:"port_start,omitempty"`
	PortEnd   uint16   `json:"port_end,omitempty"`
	// ICMPType and ICMPCode for icmp.
	ICMPType uint8 `json:"icmp_type,omitempty"`
	ICMPCode uint8 `json:"icmp_code,omitempty"`
	Log      bool  `json:"log,omitempty"`
}

// AddrRange is the IPv4 addresses From..To (inclusive).
type AddrRange struct {
	From netip.Addr `json:"from"`
	To   netip.Addr `json:"to"`
}

// Parse checks rules against the LRP API's rules (the same the BBS applies) and turns
// them into Rules. The error names every bad field (as prefix[i].field) and its rule.
func Parse(prefix string, rules []*modelsv1.EgressRule) ([]Rule, error) {
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("%s: must have at most %d rules, got %d", prefix, MaxRules, len(rules))
	}
	out := make([]Rule, 0, len(rules))
	var errs []error
	for i, r := range rules {
		pr, err := parseRule(fmt.Sprintf("%s[%d]", prefix, i), r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, pr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// parseRule parses one rule; path names it in errors.
func parseRule(path string, r *modelsv1.EgressRule) (Rule, error) {
	if r == nil {
		return Rule{}, fmt.Errorf("%s: is required", path)
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{path, field}, args...)...))
	}
	out := Rule{Protocol: r.GetProtocol(), Log: r.GetLog()}
	hasPorts, hasRange := len(r.GetPorts()) > 0, r.GetPortRange() != nil
	switch out.Protocol {
	case ProtoTCP, ProtoUDP:
		if hasPorts == hasRange {
			bad("ports", "tcp and udp rules need exactly one of ports or port_range")
		}
		if len(r.GetPorts()) > MaxPorts {
			bad("ports", "must have at most %d ports, got %d", MaxPorts, len(r.GetPorts()))
		}
		for i, p := range r.GetPorts() {
			if p < 1 || p > 65535 {
				bad(fmt.Sprintf("ports[%d]", i), "must be between 1 and 65535, got %d", p)
				continue
			}
			out.Ports = append(out.Ports, uint16(p))
		}
		if hasRange {
			s, e := r.GetPortRange().GetStart(), r.GetPortRange().GetEnd()
			switch {
			case s < 1 || s > 65535:
				bad("port_range.start", "must be between 1 and 65535, got %d", s)
			case e < 1 || e > 65535:
				bad("port_range.end", "must be between 1 and 65535, got %d", e)
			case s > e:
				bad("port_range", "start must be <= end, got %d-%d", s, e)
			default:
				out.PortStart, out.PortEnd = uint16(s), uint16(e)
			}
		}
	case ProtoICMP, ProtoAll:
		if hasPorts {
			bad("ports", "only allowed for tcp and udp")
		}
		if hasRange {
			bad("port_range", "only allowed for tcp and udp")
		}
	default:
		bad("protocol", "must be one of tcp, udp, icmp, all, got %q", out.Protocol)
	}
	switch info := r.GetIcmpInfo(); {
	case out.Protocol == ProtoICMP && info == nil:
		bad("icmp_info", "required for icmp")
	case out.Protocol != ProtoICMP && info != nil:
		bad("icmp_info", "only allowed for icmp")
	case info != nil:
		if t, ok := icmpField(info.Type); ok {
			out.ICMPType = t
		} else {
			bad("icmp_info.type", "is required and must be between 0 and 255")
		}
		if c, ok := icmpField(info.Code); ok {
			out.ICMPCode = c
		} else {
			bad("icmp_info.code", "is required and must be between 0 and 255")
		}
	}
	if out.Log && (out.Protocol == ProtoUDP || out.Protocol == ProtoICMP) {
		bad("log", "must not be true for %s", out.Protocol)
	}
	dests := r.GetDestinations()
	switch {
	case len(dests) == 0:
		bad("destinations", "must have at least one destination")
	case len(dests) > MaxDestinations:
		bad("destinations", "must have at most %d destinations, got %d", MaxDestinations, len(dests))
	}
	for i, d := range dests {
		ar, err := parseDestination(d)
		if err != nil {
			bad(fmt.Sprintf("destinations[%d]", i), "%v", err)
			continue
		}
		if ar.From.Is4() {
			out.Destinations = append(out.Destinations, ar)
		}
	}
	return out, errors.Join(errs...)
}

// icmpField returns an ICMP type or code when it is set and within 0-255.
func icmpField(v *int32) (uint8, bool) {
	if v == nil || *v < 0 || *v > 255 {
		return 0, false
	}
	return uint8(*v), true
}

// parseDestination parses an IP, an IP range "a-b" (a <= b, one family) or a CIDR.
func parseDestination(d string) (AddrRange, error) {
	const rule = "must be an IP, a CIDR or an IP range (a-b with a <= b)"
	if from, to, isRange := strings.Cut(d, "-"); isRange {
		a, errA := netip.ParseAddr(from)
		b, errB := netip.ParseAddr(to)
		if errA != nil || errB != nil || a.Is4() != b.Is4() || a.Compare(b) > 0 || a.Zone() != "" || b.Zone() != "" {
			return AddrRange{}, fmt.Errorf("%s, got %q", rule, d)
		}
		return AddrRange{From: a.Unmap(), To: b.Unmap()}, nil
	}
	if strings.Contains(d, "/") {
		p, err := netip.ParsePrefix(d)
		if err != nil {
			return AddrRange{}, fmt.Errorf("%s, got %q", rule, d)
		}
		p = p.Masked()
		return AddrRange{From: p.Addr(), To: lastAddr(p)}, nil
	}
	a, err := netip.ParseAddr(d)
	if err != nil || a.Zone() != "" {
		return AddrRange{}, fmt.Errorf("%s, got %q", rule, d)
	}
	return AddrRange{From: a, To: a}, nil
}

// lastAddr is the highest address of the masked prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
