package routingtable

import (
	"maps"
	"net"
	"sort"
	"strconv"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ComponentTag is added to every message's tags.
const ComponentTag = "route-emitter"

// rowKey names one ActualLRP row of a process: an index in one presence.
type rowKey struct {
	Index    int32
	Presence modelsv1.ActualLRPPresence
}

// endpointKey is an endpoint's identity: its instance and presence (an ordinary and an
// evacuating copy of one instance are two endpoints).
type endpointKey struct {
	InstanceGUID string
	Presence     modelsv1.ActualLRPPresence
}

// itemKey identifies one registration: a URI served by one endpoint at one address.
type itemKey struct {
	URI string
	endpointKey
	Host    string
	Port    uint32
	TLSPort uint32
}

// addressKey is what gorouter identifies an endpoint of a URI by.
type addressKey struct {
	URI     string
	Host    string
	Port    uint32
	TLSPort uint32
}

// process is everything the table knows of one process guid. A process in a table is
// never mutated: a change replaces it with a modified copy (see change), so a Clone of
// the table can be read while the table moves on.
type process struct {
	desired *Desired
	actuals map[rowKey]*Actual
	// routes is the number of its registrations when it was stored.
	routes int
}

// copy returns a process that can be mutated without touching p (nil: a new one).
func (p *process) copy() *process {
	c := &process{actuals: map[rowKey]*Actual{}}
	if p != nil {
		c.desired = p.desired
		maps.Copy(c.actuals, p.actuals)
	}
	return c
}

// Table is the HTTP routing table. It is not safe for concurrent use.
type Table struct {
	processes map[string]*process
	// owners remembers which instance holds each host:port (address collisions).
	owners map[string]string
	// routes is the number of registrations (kept current by every change).
	routes int
}

// New returns an empty table.
func New() *Table {
	return &Table{processes: map[string]*process{}, owners: map[string]string{}}
}

// Clone returns a read-only copy of the table that later changes to t do not affect
// (cheap: processes are shared, being replaced rather than mutated). The clone can be
// read (Registrations, Routes, MarshalJSON, RouteCount) while t changes on.
func (t *Table) Clone() *Table {
	return &Table{processes: maps.Clone(t.processes), owners: map[string]string{}, routes: t.routes}
}

// entry returns the process of guid for mutation, replacing the shared one by a copy.
// Only a table being built that no Clone shares may use it.
func (t *Table) entry(guid string) *process {
	p := t.processes[guid].copy()
	t.processes[guid] = p
	return p
}

// change runs mutate on a copy of the process of guid, stores the copy and returns the
// messages the difference requires.
func (t *Table) change(guid string, mutate func(p *process)) Messages {
	old := t.processes[guid]
	var before map[itemKey]item
	var beforeEndpoints map[endpointKey]bool
	if old != nil {
		before, beforeEndpoints = old.items(), old.endpoints()
	}
	p := old.copy()
	mutate(p)
	after := p.items()
	msgs := t.diff(before, beforeEndpoints, after)
	t.routes += len(after) - len(before)
	p.routes = len(after)
	if p.desired == nil && len(p.actuals) == 0 {
		delete(t.processes, guid)
	} else {
		t.processes[guid] = p
	}
	return msgs
}

// SetDesired stores d unless the table holds a newer version of it.
func (t *Table) SetDesired(d Desired) Messages {
	return t.change(d.ProcessGUID, func(p *process) { p.setDesired(d) })
}

// setDesired stores d in p unless p holds a newer version.
func (p *process) setDesired(d Desired) {
	if p.desired != nil && !p.desired.replacedBy(d) {
		return
	}
	p.desired = &d
}

// RemoveDesired forgets the desired LRP of guid: every route of it is unregistered.
func (t *Table) RemoveDesired(guid string) Messages {
	if t.processes[guid] == nil {
		return Messages{}
	}
	return t.change(guid, func(p *process) { p.desired = nil })
}

// HasDesired reports whether the table knows the desired LRP of guid.
func (t *Table) HasDesired(guid string) bool {
	p := t.processes[guid]
	return p != nil && p.desired != nil
}

// SetActual stores the ActualLRP row a unless the table holds a newer version of it.
func (t *Table) SetActual(a Actual) Messages {
	return t.change(a.ProcessGUID, func(p *process) { p.setActual(a) })
}

// setActual stores the row a in p unless p holds a newer version of it.
func (p *process) setActual(a Actual) {
	k := rowKey{a.Index, a.Presence}
	if old := p.actuals[k]; old != nil && !old.Tag.SucceededBy(a.Tag) {
		return
	}
	p.actuals[k] = &a
}

// RemoveActual forgets the ActualLRP row a, unless the table holds a newer version.
func (t *Table) RemoveActual(a Actual) Messages {
	if t.processes[a.ProcessGUID] == nil {
		return Messages{}
	}
	return t.change(a.ProcessGUID, func(p *process) {
		k := rowKey{a.Index, a.Presence}
		old := p.actuals[k]
		if old == nil || (old.Tag.Epoch != "" && old.Tag.Epoch == a.Tag.Epoch && old.Tag.Index > a.Tag.Index) {
			return // the stored row is newer than the removed one
		}
		delete(p.actuals, k)
	})
}

// endpoints is the set of rows that serve: RUNNING, routable, and index below instances
// when the desired LRP is known (a desired LRP arriving adds routes, not endpoints).
func (p *process) endpoints() map[endpointKey]bool {
	set := map[endpointKey]bool{}
	for _, a := range p.actuals {
		if a.serves() && (p.desired == nil || a.Index < p.desired.Instances) {
			set[endpointKey{a.InstanceGUID, a.Presence}] = true
		}
	}
	return set
}

// item is one registration and the since of its endpoint.
type item struct {
	msg   RegistryMessage
	since int64
}

// items are the registrations the process requires now, without endpoint_updated_at_ns.
func (p *process) items() map[itemKey]item {
	items := map[itemKey]item{}
	d := p.desired
	if d == nil || len(d.Routes) == 0 {
		return items
	}
	for _, a := range p.actuals {
		if !a.serves() || a.Index >= d.Instances {
			continue
		}
		for _, r := range d.Routes {
			host, port, tlsPort, ok := a.address(r.Port)
			if !ok {
				continue
			}
			for _, uri := range r.Hostnames {
				if uri == "" {
					continue
				}
				k := itemKey{URI: uri, endpointKey: endpointKey{a.InstanceGUID, a.Presence}, Host: host, Port: port, TLSPort: tlsPort}
				items[k] = item{message(d, a, r, uri, host, port, tlsPort), a.Since}
			}
		}
	}
	return items
}

// message builds the registry message of uri served by a.
func message(d *Desired, a *Actual, r Route, uri, host string, port, tlsPort uint32) RegistryMessage {
	m := RegistryMessage{
		Host: host, Port: port, TLSPort: tlsPort, URIs: []string{uri},
		App: d.LogGUID, RouteServiceURL: r.RouteServiceURL, IsolationSegment: r.IsolationSegment,
		Protocol: r.Protocol, Options: r.Options, AvailabilityZone: a.AvailabilityZone,
		Tags: resolveTags(d.MetricTags, a),
	}
	if a.InstanceGUID != "" {
		m.PrivateInstanceID = a.InstanceGUID
		m.PrivateInstanceIndex = strconv.Itoa(int(a.Index))
		m.ServerCertDomainSAN = a.InstanceGUID
	}
	return m
}

// resolveTags resolves the desired metric tags for a and adds component: route-emitter.
func resolveTags(tags map[string]MetricTag, a *Actual) map[string]string {
	out := map[string]string{"component": ComponentTag}
	for k, v := range tags {
		switch v.Dynamic {
		case modelsv1.MetricTagValue_DYNAMIC_INDEX:
			out[k] = strconv.Itoa(int(a.Index))
		case modelsv1.MetricTagValue_DYNAMIC_INSTANCE_GUID:
			out[k] = a.InstanceGUID
		default:
			out[k] = v.Static
		}
	}
	return out
}

// diff turns the change from before to after into messages. A registration is new or
// changed content; it carries endpoint_updated_at_ns (the instance's since) only when its
// endpoint did not serve before. An unregistration is skipped while another endpoint still
// registers the same URI at the same address (an instance's evacuating copy).
func (t *Table) diff(before map[itemKey]item, beforeEndpoints map[endpointKey]bool, after map[itemKey]item) Messages {
	var msgs Messages
	addresses := map[addressKey]bool{}
	for k, it := range after {
		addresses[addressKey{k.URI, k.Host, k.Port, k.TLSPort}] = true
		if old, ok := before[k]; ok && sameContent(old.msg, it.msg) {
			continue
		}
		m := it.msg
		if !beforeEndpoints[k.endpointKey] {
			m.EndpointUpdatedAtNs = it.since
			msgs.AddressCollisions += t.claim(k)
		}
		msgs.Registrations = append(msgs.Registrations, m)
	}
	for k, it := range before {
		if _, ok := after[k]; ok || addresses[addressKey{k.URI, k.Host, k.Port, k.TLSPort}] {
			continue
		}
		t.release(k)
		msgs.Unregistrations = append(msgs.Unregistrations, it.msg)
	}
	SortMessages(msgs.Registrations)
	SortMessages(msgs.Unregistrations)
	return msgs
}

// claim records that k's instance holds its host:port; it returns 1 when another
// instance held it (an address collision).
func (t *Table) claim(k itemKey) int {
	addr := net.JoinHostPort(k.Host, strconv.Itoa(int(k.Port)))
	owner, held := t.owners[addr]
	t.owners[addr] = k.InstanceGUID
	if held && owner != k.InstanceGUID {
		return 1
	}
	return 0
}

// release forgets k's hold of its host:port.
func (t *Table) release(k itemKey) {
	addr := net.JoinHostPort(k.Host, strconv.Itoa(int(k.Port)))
	if t.owners[addr] == k.InstanceGUID {
		delete(t.owners, addr)
	}
}

// Registrations are every registration of the table (for the periodic re-broadcast),
// without endpoint_updated_at_ns, sorted.
func (t *Table) Registrations() []RegistryMessage {
	var all []RegistryMessage
	for _, p := range t.processes {
		for _, it := range p.items() {
			all = append(all, it.msg)
		}
	}
	SortMessages(all)
	return all
}

// ProcessGUIDs lists the processes the table knows, sorted.
func (t *Table) ProcessGUIDs() []string {
	guids := make([]string, 0, len(t.processes))
	for g := range t.processes {
		guids = append(guids, g)
	}
	sort.Strings(guids)
	return guids
}
