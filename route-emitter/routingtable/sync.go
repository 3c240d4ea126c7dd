package routingtable

import (
	"errors"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Snapshot is what a full sync fetched from the BBS, plus the events that arrived while
// it was fetching (replayed in order onto the fresh table).
type Snapshot struct {
	Desired      []*modelsv1.DesiredLRPRoutingInfo
	Actuals      []*modelsv1.ActualLRP
	FreshDomains []string
	Events       []*modelsv1.Event
}

// Sync replaces the table with one built from s and returns the difference
// (reference/routing.md §2.6). For a process whose domain is not fresh, routes that
// only the old table has are kept rather than unregistered. Malformed routes are
// reported; everything else is applied.
func (t *Table) Sync(s Snapshot) (Messages, error) {
	fresh, err := Build(s)
	msgs, replayErr := t.SyncTo(fresh, s.Events, s.FreshDomains)
	return msgs, errors.Join(err, replayErr)
}

// Build returns a table of the snapshot's desired and actual LRPs (its events and
// domains are left to SyncTo). It touches no existing table, so a caller can build
// without holding the lock that guards the live one; it computes no messages (SyncTo
// does, for the processes that differ).
func Build(s Snapshot) (*Table, error) {
	fresh := New()
	var errs []error
	for _, info := range s.Desired {
		d, err := DesiredFromRoutingInfo(info)
		if err != nil {
			errs = append(errs, err)
		}
		fresh.built(d.ProcessGUID).setDesired(d)
	}
	for _, a := range s.Actuals {
		act := ActualFromLRP(a)
		fresh.built(act.ProcessGUID).setActual(act)
	}
	return fresh, errors.Join(errs...)
}

// built returns the process of guid in a table being built, creating it (no copy: no
// clone shares a table being built).
func (t *Table) built(guid string) *process {
	p := t.processes[guid]
	if p == nil {
		p = &process{actuals: map[rowKey]*Actual{}}
		t.processes[guid] = p
	}
	return p
}

// SyncTo replays events onto fresh (a table from Build, which it consumes), keeps the
// routes of processes whose domain is not fresh, replaces t's content with it and
// returns the difference. Processes equal in both tables cost no message building.
func (t *Table) SyncTo(fresh *Table, events []*modelsv1.Event, freshDomains []string) (Messages, error) {
	var errs []error
	for _, e := range events {
		if _, err := fresh.ApplyEvent(e); err != nil {
			errs = append(errs, err)
		}
	}
	fresh.keepStaleRoutes(t, freshDomains)

	fresh.owners = t.owners
	var msgs Messages
	routes := 0
	compare := func(old, now *process) {
		if old != nil && now != nil && old.equal(now) {
			routes += old.routes
			return
		}
		if old == nil {
			old = &process{}
		}
		if now == nil {
			now = &process{}
		}
		after := now.items()
		now.routes = len(after) // now is fresh's own: no clone shares it yet
		routes += len(after)
		msgs.merge(fresh.diff(old.items(), old.endpoints(), after))
	}
	for guid, old := range t.processes {
		compare(old, fresh.processes[guid])
	}
	for guid, now := range fresh.processes {
		if t.processes[guid] == nil {
			compare(nil, now)
		}
	}
	SortMessages(msgs.Registrations)
	SortMessages(msgs.Unregistrations)
	t.processes, t.owners, t.routes = fresh.processes, fresh.owners, routes
	return msgs, errors.Join(errs...)
}

// equal reports whether p and o hold the same desired LRP and rows (the same
// registrations, then).
func (p *process) equal(o *process) bool {
	if !p.desired.equal(o.desired) || len(p.actuals) != len(o.actuals) {
		return false
	}
	for k, a := range p.actuals {
		if !a.equal(o.actuals[k]) {
			return false
		}
	}
	return true
}

// keepStaleRoutes carries over, for every process of old whose domain is not fresh, the
// desired LRP (when the snapshot lacks it) or the routes the snapshot dropped (marking
// the merged version KeptRoutes, so that the BBS's version, replayed by an event the
// stream delivers after the sync, still replaces it: old may lag the BBS after a restart).
func (t *Table) keepStaleRoutes(old *Table, freshDomains []string) {
	isFresh := map[string]bool{}
	for _, d := range freshDomains {
		isFresh[d] = true
	}
	for guid, p := range old.processes {
		if p.desired == nil || isFresh[p.desired.Domain] {
			continue
		}
		now := t.entry(guid)
		if now.desired == nil {
			kept := *p.desired
			now.desired = &kept
			continue
		}
		merged := *now.desired
		merged.Routes = append([]Route(nil), now.desired.Routes...)
		for _, r := range p.desired.Routes {
			if !containsRoute(merged.Routes, r) {
				merged.Routes = append(merged.Routes, r)
				merged.KeptRoutes = true
			}
		}
		now.desired = &merged
	}
}

// containsRoute reports whether routes has an entry with r's port and hostnames.
func containsRoute(routes []Route, r Route) bool {
	for _, x := range routes {
		if x.Port == r.Port && equalStrings(x.Hostnames, r.Hostnames) {
			return true
		}
	}
	return false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
