package models

import (
	"net/netip"
	"strings"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Egress rule protocols.
const (
	protocolTCP  = "tcp"
	protocolUDP  = "udp"
	protocolICMP = "icmp"
	protocolAll  = "all"
)

// egressRule validates one egress rule as the LRP API describes it: ports for tcp
// and udp, icmp_info for icmp, log only where the firewall can log, and at least
// one destination that is an IP, a CIDR or an IP range. icmp_info needs both its type
// and its code (0-255 each).
func (v *violations) egressRule(path string, r *modelsv1.EgressRule) {
	if r == nil {
		v.add(path, ruleRequired)
		return
	}
	proto := r.GetProtocol()
	switch proto {
	case protocolTCP, protocolUDP:
		v.egressPorts(path, r)
	case protocolICMP, protocolAll:
		if len(r.GetPorts()) > 0 {
			v.add(field(path, "ports"), "only allowed for tcp and udp")
		}
		if r.GetPortRange() != nil {
			v.add(field(path, "port_range"), "only allowed for tcp and udp")
		}
	default:
		v.add(field(path, "protocol"), "must be one of tcp, udp, icmp, all")
	}
	switch info := r.GetIcmpInfo(); {
	case proto == protocolICMP && info == nil:
		v.add(field(path, "icmp_info"), "required for icmp")
	case proto != protocolICMP && info != nil:
		v.add(field(path, "icmp_info"), "only allowed for icmp")
	case info != nil:
		v.icmpField(field(path, "icmp_info.type"), info.Type)
		v.icmpField(field(path, "icmp_info.code"), info.Code)
	}
	if r.GetLog() && (proto == protocolUDP || proto == protocolICMP) {
		v.add(field(path, "log"), "must not be true for "+proto)
	}
	if len(r.GetDestinations()) == 0 {
		v.add(field(path, "destinations"), "must have at least one destination")
	}
	for i, d := range r.GetDestinations() {
		if !validDestination(d) {
			v.add(item(field(path, "destinations"), i), "must be an IP, a CIDR or an IP range (a-b with a <= b)")
		}
	}
}

// icmpField checks that an ICMP type or code is given and between 0 and 255.
func (v *violations) icmpField(path string, value *int32) {
	switch {
	case value == nil:
		v.add(path, ruleRequired)
	case *value < 0 || *value > 255:
		v.add(path, "must be between 0 and 255")
	}
}

// egressPorts checks that a tcp or udp rule has exactly one of ports or port_range.
func (v *violations) egressPorts(path string, r *modelsv1.EgressRule) {
	hasPorts, hasRange := len(r.GetPorts()) > 0, r.GetPortRange() != nil
	if hasPorts == hasRange {
		v.add(path, "tcp and udp rules need exactly one of ports or port_range")
	}
	for i, p := range r.GetPorts() {
		v.port(item(field(path, "ports"), i), p)
	}
	if hasRange {
		pr := r.GetPortRange()
		v.port(field(path, "port_range.start"), pr.GetStart())
		v.port(field(path, "port_range.end"), pr.GetEnd())
		if pr.GetStart() > pr.GetEnd() {
			v.add(field(path, "port_range"), "start must be <= end")
		}
	}
}

// validDestination reports whether d is an IP, a CIDR or an IP range "a-b" of one
// address family with a <= b.
func validDestination(d string) bool {
	if from, to, isRange := strings.Cut(d, "-"); isRange {
		a, errA := netip.ParseAddr(from)
		b, errB := netip.ParseAddr(to)
		return errA == nil && errB == nil && a.Is4() == b.Is4() && a.Compare(b) <= 0
	}
	if strings.Contains(d, "/") {
		_, err := netip.ParsePrefix(d)
		return err == nil
	}
	_, err := netip.ParseAddr(d)
	return err == nil
}
