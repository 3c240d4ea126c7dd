package plan

import (
	"fmt"
	"testing"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

// benchSnapshot is n ActualLRPs of n/10 DesiredLRPs with 10 instances each, every
// 100th row needing action (crashed and due, stale unclaimed, on a vanished cell,
// or orphaned in a fresh domain, in turn).
func benchSnapshot(n int) Snapshot {
	const perLRP = 10
	var ds []*modelsv1.DesiredLRPSchedulingInfo
	as := make([]*modelsv1.ActualLRP, 0, n)
	for i := 0; i < n; i++ {
		guid := fmt.Sprintf("lrp-%06d", i/perLRP)
		idx := int32(i % perLRP)
		if idx == 0 {
			ds = append(ds, desired(guid, freshDomain, perLRP))
		}
		a := actual(guid, idx, running, on(liveCell), sinceAgo(time.Hour))
		if i%100 == 0 {
			switch (i / 100) % 4 {
			case 0:
				a = actual(guid, idx, crashed, crashes(4), sinceAgo(time.Hour))
			case 1:
				a = actual(guid, idx, unclaimed, sinceAgo(time.Minute))
			case 2:
				a = actual(guid, idx, running, on(goneCell))
			case 3:
				a = actual("orphan-"+guid, idx, running, on(liveCell))
			}
		}
		as = append(as, a)
	}
	// The orphaned rows left their index missing.
	return snapshot(ds, as)
}

func TestBenchSnapshotNeedsOnePercentAction(t *testing.T) {
	res := Plan(benchSnapshot(10_000), Options{})
	// 100 problem rows; each orphan also leaves a missing index.
	r := require.New(t)
	r.Len(res.Unclaims, 50)
	r.Len(res.MarkSuspects, 25)
	r.Len(res.Retires, 25)
	r.Len(res.CreateMissing, 25)
}

func BenchmarkPlan100k(b *testing.B) {
	const n = 100_000
	s := benchSnapshot(n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Plan(s, Options{})
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "actuals/s")
}
