package plan

import (
	"fmt"
	"maps"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// now is the fake clock of every test snapshot.
var now = time.Unix(1_700_000_000, 0)

const (
	freshDomain = "cf-apps"
	staleDomain = "stale-apps"
	liveCell    = "cell-live"
	goneCell    = "cell-gone"
)

// desired is a scheduling info for guid in domain with n instances.
func desired(guid, domain string, n int32) *modelsv1.DesiredLRPSchedulingInfo {
	return &modelsv1.DesiredLRPSchedulingInfo{
		ProcessGuid:     guid,
		Domain:          domain,
		Instances:       n,
		Rootfs:          "preloaded:cflinuxfs4",
		Resource:        &modelsv1.Resource{MemoryMb: 128, DiskMb: 256, MaxPids: 64},
		PlacementTags:   []string{"zone-tag"},
		VolumeDrivers:   []string{"nfs"},
		ModificationTag: &modelsv1.ModificationTag{Epoch: "d-" + guid, Index: 2},
	}
}

// rowOpt tweaks an ActualLRP fixture.
type rowOpt func(*modelsv1.ActualLRP)

// on puts the row on cell with an instance guid.
func on(cell string) rowOpt {
	return func(a *modelsv1.ActualLRP) {
		a.CellId = cell
		a.InstanceGuid = fmt.Sprintf("ig-%s-%d-%s", a.ProcessGuid, a.Index, cell)
	}
}

// as sets the presence.
func as(p modelsv1.ActualLRPPresence) rowOpt {
	return func(a *modelsv1.ActualLRP) { a.Presence = p }
}

// sinceAgo sets since to d before now.
func sinceAgo(d time.Duration) rowOpt {
	return func(a *modelsv1.ActualLRP) { a.Since = now.Add(-d).UnixNano() }
}

// crashes sets the crash count.
func crashes(n int32) rowOpt {
	return func(a *modelsv1.ActualLRP) { a.CrashCount = n }
}

// inDomain sets the domain.
func inDomain(d string) rowOpt {
	return func(a *modelsv1.ActualLRP) { a.Domain = d }
}

// actual is an ORDINARY row of guid/index in the fresh domain, since 1s ago.
func actual(guid string, index int32, state modelsv1.ActualLRPState, opts ...rowOpt) *modelsv1.ActualLRP {
	a := &modelsv1.ActualLRP{
		ProcessGuid:     guid,
		Index:           index,
		Domain:          freshDomain,
		State:           state,
		Presence:        ordinary,
		Since:           now.Add(-time.Second).UnixNano(),
		ModificationTag: &modelsv1.ModificationTag{Epoch: fmt.Sprintf("a-%s-%d", guid, index), Index: 7},
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// snapshot is a snapshot at now with liveCell present and freshDomain fresh.
func snapshot(d []*modelsv1.DesiredLRPSchedulingInfo, a []*modelsv1.ActualLRP, t ...*modelsv1.Task) Snapshot {
	return Snapshot{
		TakenAt:      now,
		FreshDomains: map[string]bool{freshDomain: true},
		Cells:        map[string]*modelsv1.CellPresence{liveCell: {CellId: liveCell, RepAddress: "127.0.0.1:1"}},
		Desired:      d,
		Actual:       a,
		Tasks:        t,
	}
}

// summary lists the plan's actions as "kind subject".
func summary(r Result) []string {
	out := []string{}
	for _, a := range r.Actions() {
		out = append(out, a.Kind()+" "+a.Subject())
	}
	return out
}

// startIndices maps each start request's process guid to its indices.
func startIndices(r Result) map[string][]int32 {
	out := map[string][]int32{}
	for _, s := range r.LRPStarts {
		out[s.GetProcessGuid()] = append(out[s.GetProcessGuid()], s.GetIndices()...)
	}
	return out
}

// cloneFresh copies the freshness map.
func cloneFresh(m map[string]bool) map[string]bool { return maps.Clone(m) }
