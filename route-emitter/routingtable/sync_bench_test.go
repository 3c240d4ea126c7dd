package routingtable

import (
	"fmt"
	"testing"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// benchSnapshot is n routed processes of two RUNNING instances each.
func benchSnapshot(b *testing.B, n int) Snapshot {
	var s Snapshot
	routes := cfRoutes(&testing.T{}, route(8080, "x.example.com"))
	for i := range n {
		guid := fmt.Sprintf("p-%d", i)
		s.Desired = append(s.Desired, &modelsv1.DesiredLRPRoutingInfo{ProcessGuid: guid, Domain: "cf-apps", Instances: 2,
			Routes: routes, ModificationTag: &modelsv1.ModificationTag{Epoch: "e", Index: 1}})
		for index := range int32(2) {
			a := actualLRP(index, ordinary, 1)
			a.ProcessGuid, a.InstanceGuid = guid, fmt.Sprintf("%s-%d", guid, index)
			s.Actuals = append(s.Actuals, a)
		}
	}
	s.FreshDomains = []string{"cf-apps"}
	return s
}

// BenchmarkSyncToUnchanged is the part of a periodic sync done under the watcher's
// lock when nothing changed (25,000 processes, 50,000 routes).
func BenchmarkSyncToUnchanged(b *testing.B) {
	s := benchSnapshot(b, 25_000)
	table := New()
	if _, err := table.Sync(s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		fresh, _ := Build(s)
		b.StartTimer()
		msgs, _ := table.SyncTo(fresh, nil, s.FreshDomains)
		if !msgs.Empty() {
			b.Fatal("unchanged sync sent messages")
		}
	}
}

// BenchmarkRegistrations is a full re-broadcast's walk (50,000 routes).
func BenchmarkRegistrations(b *testing.B) {
	s := benchSnapshot(b, 25_000)
	table := New()
	if _, err := table.Sync(s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if n := len(table.Registrations()); n != 50_000 {
			b.Fatalf("%d registrations", n)
		}
	}
}
