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
	fresh := New()
	var errs []error
	for _, info := range s.Desired {
		d, err := DesiredFromRoutingInfo(info)
		if err != nil {
			errs = append(errs, err)
		}
		fresh.SetDesired(d)
	}
	for _, a := range s.Actuals {
		fresh.SetActual(ActualFromLRP(a))
	}
	for _, e := range s.Events {
		if _, err := fresh.ApplyEvent(e); err != nil {
			errs = append(errs, err)
		}
	}
	fresh.keepStaleRoutes(t, s.FreshDomains)

	fresh.owners = t.owners
	var msgs Messages
	for guid := range union(t.processes, fresh.processes) {
		old, now := t.processes[guid], fresh.processes[guid]
		if old == nil {
			old = &process{}
		}
		if now == nil {
			now = &process{}
		}
		msgs.merge(fresh.diff(old.items(), old.endpoints(), now.items()))
	}
	SortMessages(msgs.Registrations)
	SortMessages(msgs.Unregistrations)
	t.processes, t.owners = fresh.processes, fresh.owners
	return msgs, errors.Join(errs...)
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

func union(a, b map[string]*process) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
