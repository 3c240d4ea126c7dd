package routingtable

import (
	"sort"

	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// Filter selects routes; empty fields match everything.
type Filter struct {
	ProcessGUID string
	Hostname    string
}

// Routes lists every hostname of every (process guid, container port) with the
// endpoints registered for it, sorted by hostname, process guid, container port.
func (t *Table) Routes(f Filter) []*routeemitterv1.Route {
	var out []*routeemitterv1.Route
	for guid, p := range t.processes {
		d := p.desired
		if d == nil || (f.ProcessGUID != "" && f.ProcessGUID != guid) {
			continue
		}
		for _, r := range d.Routes {
			for _, h := range r.Hostnames {
				if h == "" || (f.Hostname != "" && f.Hostname != h) {
					continue
				}
				out = append(out, &routeemitterv1.Route{
					Hostname: h, ProcessGuid: guid, ContainerPort: r.Port, LogGuid: d.LogGUID, Domain: d.Domain,
					RouteServiceUrl: r.RouteServiceURL, IsolationSegment: r.IsolationSegment, Protocol: r.Protocol,
					Endpoints: p.routeEndpoints(r.Port),
				})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Hostname != b.Hostname:
			return a.Hostname < b.Hostname
		case a.ProcessGuid != b.ProcessGuid:
			return a.ProcessGuid < b.ProcessGuid
		default:
			return a.ContainerPort < b.ContainerPort
		}
	})
	return out
}

// routeEndpoints are the serving endpoints of container port, by index and presence.
func (p *process) routeEndpoints(containerPort uint32) []*routeemitterv1.RouteEndpoint {
	var eps []*routeemitterv1.RouteEndpoint
	for _, a := range p.actuals {
		if !a.serves() || a.Index >= p.desired.Instances {
			continue
		}
		host, port, tlsPort, ok := a.address(containerPort)
		if !ok {
			continue
		}
		eps = append(eps, &routeemitterv1.RouteEndpoint{
			InstanceGuid: a.InstanceGUID, Index: a.Index, Host: host, Port: port, TlsPort: tlsPort,
			Presence: a.Presence, AvailabilityZone: a.AvailabilityZone, Since: a.Since,
		})
	}
	sort.Slice(eps, func(i, j int) bool {
		if eps[i].Index != eps[j].Index {
			return eps[i].Index < eps[j].Index
		}
		return eps[i].Presence < eps[j].Presence
	})
	return eps
}

// RouteCount is the number of (uri, endpoint) registrations in the table (kept by every
// change: no walk).
func (t *Table) RouteCount() int { return t.routes }
