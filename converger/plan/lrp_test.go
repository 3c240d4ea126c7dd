package plan

import (
	"fmt"
	"testing"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanLRPRules(t *testing.T) {
	paused := Options{Paused: true}
	d := func(n int32) []*modelsv1.DesiredLRPSchedulingInfo {
		return []*modelsv1.DesiredLRPSchedulingInfo{desired("web", freshDomain, n)}
	}
	dStale := func(n int32) []*modelsv1.DesiredLRPSchedulingInfo {
		return []*modelsv1.DesiredLRPSchedulingInfo{desired("web", staleDomain, n)}
	}
	rows := func(a ...*modelsv1.ActualLRP) []*modelsv1.ActualLRP { return a }

	tests := []struct {
		name       string
		desired    []*modelsv1.DesiredLRPSchedulingInfo
		actual     []*modelsv1.ActualLRP
		opts       Options
		wantAction []string
		wantStarts map[string][]int32
	}{
		{
			name:    "steady state does nothing",
			desired: d(2),
			actual: rows(actual("web", 0, running, on(liveCell)), actual("web", 1, claimed, on(liveCell)),
				actual("web", 2, unclaimed, inDomain(staleDomain), sinceAgo(0))),
			wantAction: []string{},
		},
		{
			name:       "no rows: every index is created and auctioned",
			desired:    d(3),
			wantAction: []string{"create-missing web/0 ORDINARY", "create-missing web/1 ORDINARY", "create-missing web/2 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0, 1, 2}},
		},
		{
			name:       "gaps are created around existing rows, also while paused",
			desired:    d(4),
			actual:     rows(actual("web", 1, running, on(liveCell)), actual("web", 2, running, on(liveCell))),
			opts:       paused,
			wantAction: []string{"create-missing web/0 ORDINARY", "create-missing web/3 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0, 3}},
		},
		{
			name:       "an index whose only row is SUSPECT or EVACUATING gets an ORDINARY row",
			desired:    d(2),
			actual:     rows(actual("web", 0, running, on(goneCell), as(suspect)), actual("web", 1, running, on(liveCell), as(evacuating))),
			wantAction: []string{"create-missing web/0 ORDINARY", "create-missing web/1 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0, 1}},
		},
		{
			name:       "fresh domain retires extra indices",
			desired:    d(1),
			actual:     rows(actual("web", 0, running, on(liveCell)), actual("web", 1, running, on(liveCell)), actual("web", 5, unclaimed)),
			wantAction: []string{"retire web/1 ORDINARY", "retire web/5 ORDINARY"},
		},
		{
			name:    "stale domain keeps extra indices",
			desired: dStale(1),
			actual: rows(actual("web", 0, running, on(liveCell), inDomain(staleDomain)),
				actual("web", 1, running, on(liveCell), inDomain(staleDomain))),
			wantAction: []string{},
		},
		{
			name:       "paused keeps extra indices in a fresh domain",
			desired:    d(1),
			actual:     rows(actual("web", 0, running, on(liveCell)), actual("web", 1, running, on(liveCell))),
			opts:       paused,
			wantAction: []string{},
		},
		{
			name:       "fresh domain retires orphaned instances",
			actual:     rows(actual("gone", 0, running, on(liveCell)), actual("gone", 1, crashed, crashes(5), sinceAgo(time.Hour))),
			wantAction: []string{"retire gone/0 ORDINARY", "retire gone/1 ORDINARY"},
		},
		{
			name:       "stale domain keeps orphaned instances",
			actual:     rows(actual("gone", 0, running, on(liveCell), inDomain(staleDomain))),
			wantAction: []string{},
		},
		{
			name:       "paused keeps orphaned instances",
			actual:     rows(actual("gone", 0, running, on(liveCell))),
			opts:       paused,
			wantAction: []string{},
		},
		{
			name:       "orphaned instance on a vanished cell is retired, not made suspect",
			actual:     rows(actual("gone", 0, running, on(goneCell))),
			wantAction: []string{"retire gone/0 ORDINARY"},
		},
		{
			name:       "fresh domain removes orphaned suspects",
			actual:     rows(actual("gone", 0, running, on(goneCell), as(suspect))),
			wantAction: []string{"remove-suspect gone/0 SUSPECT"},
		},
		{
			name:       "stale domain keeps orphaned suspects",
			actual:     rows(actual("gone", 0, running, on(goneCell), as(suspect), inDomain(staleDomain))),
			wantAction: []string{},
		},
		{
			name:       "paused keeps orphaned suspects",
			actual:     rows(actual("gone", 0, running, on(goneCell), as(suspect))),
			opts:       paused,
			wantAction: []string{},
		},
		{
			name:       "stale unclaimed row is re-auctioned",
			desired:    d(1),
			actual:     rows(actual("web", 0, unclaimed, sinceAgo(31*time.Second))),
			wantAction: []string{"unclaim-stale web/0 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0}},
		},
		{
			name:       "stale unclaimed in a stale domain while paused is still re-auctioned",
			desired:    dStale(1),
			actual:     rows(actual("web", 0, unclaimed, sinceAgo(time.Hour), inDomain(staleDomain))),
			opts:       paused,
			wantAction: []string{"unclaim-stale web/0 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0}},
		},
		{
			name:       "unclaimed for exactly 30s is not stale yet",
			desired:    d(1),
			actual:     rows(actual("web", 0, unclaimed, sinceAgo(30*time.Second))),
			wantAction: []string{},
		},
		{
			name:       "shorter StaleUnclaimed option applies",
			desired:    d(1),
			actual:     rows(actual("web", 0, unclaimed, sinceAgo(6*time.Second))),
			opts:       Options{StaleUnclaimed: 5 * time.Second},
			wantAction: []string{"unclaim-stale web/0 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0}},
		},
		{
			name:    "instances on a vanished cell become suspect and get replacements, even stale and paused",
			desired: dStale(2),
			actual: rows(actual("web", 0, running, on(goneCell), inDomain(staleDomain)),
				actual("web", 1, claimed, on(goneCell), inDomain(staleDomain))),
			opts:       paused,
			wantAction: []string{"mark-suspect web/0 ORDINARY", "mark-suspect web/1 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0, 1}},
		},
		{
			name:    "replacement on a vanished cell too is unclaimed without an auction",
			desired: d(1),
			actual: rows(actual("web", 0, running, on("cell-gone-too")),
				actual("web", 0, running, on(goneCell), as(suspect))),
			wantAction: []string{"unclaim-replacement web/0 ORDINARY"},
		},
		{
			name:    "suspect whose cell returned is promoted and its replacement removed",
			desired: d(1),
			actual: rows(actual("web", 0, claimed, on("cell-other")),
				actual("web", 0, running, on(liveCell), as(suspect))),
			wantAction: []string{"promote-suspect web/0 SUSPECT"},
		},
		{
			name:       "suspect whose cell returned without a replacement row is promoted",
			desired:    d(1),
			actual:     rows(actual("web", 0, running, on(liveCell), as(suspect))),
			wantAction: []string{"promote-suspect web/0 SUSPECT"},
		},
		{
			name:    "running replacement removes the suspect, also while paused",
			desired: d(1),
			actual: rows(actual("web", 0, running, on(liveCell)),
				actual("web", 0, running, on(goneCell), as(suspect))),
			opts:       paused,
			wantAction: []string{"remove-suspect web/0 SUSPECT"},
		},
		{
			name:    "suspect stays when its running replacement's cell vanished too",
			desired: d(1),
			actual: rows(actual("web", 0, running, on("cell-gone-too")),
				actual("web", 0, claimed, on(goneCell), as(suspect))),
			wantAction: []string{"unclaim-replacement web/0 ORDINARY"},
		},
		{
			name:    "suspect waits while its replacement is not running and its cell is gone",
			desired: d(1),
			actual: rows(actual("web", 0, unclaimed),
				actual("web", 0, running, on(goneCell), as(suspect))),
			wantAction: []string{},
		},
		{
			name:    "evacuating row whose cell vanished is removed",
			desired: d(2),
			actual: rows(actual("web", 0, running, on(liveCell)), actual("web", 0, running, on(goneCell), as(evacuating)),
				actual("web", 1, running, on(liveCell)), actual("web", 1, running, on(liveCell), as(evacuating))),
			wantAction: []string{"remove-evacuating web/0 EVACUATING"},
		},
		{
			name:       "crashed row due to restart is unclaimed and auctioned, also while paused",
			desired:    d(1),
			actual:     rows(actual("web", 0, crashed, crashes(3), sinceAgo(30*time.Second))),
			opts:       paused,
			wantAction: []string{"unclaim-crashed web/0 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0}},
		},
		{
			name:       "crashed row not yet due waits",
			desired:    d(1),
			actual:     rows(actual("web", 0, crashed, crashes(3), sinceAgo(29*time.Second))),
			wantAction: []string{},
		},
		{
			name:    "every kind of start for one process is merged into one request",
			desired: d(6),
			actual: rows(
				actual("web", 1, unclaimed, sinceAgo(time.Minute)),
				actual("web", 2, crashed, crashes(4), sinceAgo(2*time.Minute)),
				actual("web", 3, running, on(goneCell)),
				actual("web", 4, running, on(liveCell)),
			),
			wantAction: []string{"mark-suspect web/3 ORDINARY", "create-missing web/0 ORDINARY", "create-missing web/5 ORDINARY",
				"unclaim-stale web/1 ORDINARY", "unclaim-crashed web/2 ORDINARY"},
			wantStarts: map[string][]int32{"web": {0, 1, 2, 3, 5}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Plan(snapshot(tt.desired, tt.actual), tt.opts)
			assert.Equal(t, tt.wantAction, summary(res))
			want := tt.wantStarts
			if want == nil {
				want = map[string][]int32{}
			}
			assert.Equal(t, want, startIndices(res))
		})
	}
}

func TestPlanRestartScheduleCrashByCrash(t *testing.T) {
	// Crash counts are the values after the crash was counted (reference/bbs.md
	// §3.3): the BBS restarts counts 1 and 2 inside the crash call; a CRASHED row
	// with those counts is restarted by the planner at once.
	const immediate, never = time.Duration(0), time.Duration(-1)
	tests := []struct {
		crashes int32
		backoff time.Duration
	}{
		{1, immediate}, {2, immediate},
		{3, 30 * time.Second}, {4, time.Minute}, {5, 2 * time.Minute}, {6, 4 * time.Minute},
		{7, 8 * time.Minute}, {8, 16 * time.Minute}, {9, 16 * time.Minute}, {100, 16 * time.Minute},
		{199, 16 * time.Minute}, {200, never}, {250, never},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("crash-%d", tt.crashes), func(t *testing.T) {
			plan := func(ago time.Duration) Result {
				return Plan(snapshot([]*modelsv1.DesiredLRPSchedulingInfo{desired("web", freshDomain, 1)},
					[]*modelsv1.ActualLRP{actual("web", 0, crashed, crashes(tt.crashes), sinceAgo(ago))}), Options{})
			}
			if tt.backoff == never {
				res := plan(365 * 24 * time.Hour)
				assert.Empty(t, res.Unclaims, "crash %d must never restart", tt.crashes)
				assert.Equal(t, 1, res.LRPCounts.Crashed)
				return
			}
			if tt.backoff != immediate {
				before := plan(tt.backoff - time.Nanosecond)
				assert.Empty(t, before.Unclaims, "crash %d restarted before %s", tt.crashes, tt.backoff)
				assert.Equal(t, 1, before.LRPCounts.CrashingDesired)
			}
			at := plan(tt.backoff)
			require.Len(t, at.Unclaims, 1, "crash %d not restarted at %s", tt.crashes, tt.backoff)
			assert.Equal(t, UnclaimCrashed, at.Unclaims[0].Cause)
			assert.Equal(t, crashed, at.Unclaims[0].State)
			assert.Equal(t, map[string][]int32{"web": {0}}, startIndices(at))
			assert.Equal(t, 1, at.LRPCounts.Restarted)
		})
	}
}

func TestPlanActionsCarryTheTagTheyWereDecidedOn(t *testing.T) {
	ord := actual("web", 0, claimed, on("cell-new"))
	sus := actual("web", 0, running, on(liveCell), as(suspect))
	extra := actual("web", 1, running, on(liveCell))
	res := Plan(snapshot([]*modelsv1.DesiredLRPSchedulingInfo{desired("web", freshDomain, 1)},
		[]*modelsv1.ActualLRP{extra, sus, ord}), Options{})

	require.Len(t, res.PromoteSuspects, 1)
	p := res.PromoteSuspects[0]
	assert.Equal(t, Row{ProcessGUID: "web", Index: 0, Domain: freshDomain, Presence: suspect, InstanceGUID: sus.InstanceGuid,
		CellID: liveCell, State: running, Tag: Tag{Epoch: "a-web-0", Index: 7}}, p.Row)
	require.NotNil(t, p.Replacement)
	assert.Equal(t, claimed, p.Replacement.State)
	assert.Equal(t, "cell-new", p.Replacement.CellID)
	assert.Contains(t, p.Why(), liveCell)

	require.Len(t, res.Retires, 1)
	r := res.Retires[0]
	assert.Equal(t, RetireExtraIndex, r.Cause)
	assert.Equal(t, Tag{Epoch: "a-web-1", Index: 7}, r.Tag)
	assert.Equal(t, running, r.State)
	assert.Contains(t, r.Why(), "beyond 1 desired instances")

	res = Plan(snapshot([]*modelsv1.DesiredLRPSchedulingInfo{desired("web", freshDomain, 1)}, nil), Options{})
	require.Len(t, res.CreateMissing, 1)
	assert.Equal(t, Tag{Epoch: "d-web", Index: 2}, res.CreateMissing[0].DesiredTag)
	assert.Equal(t, freshDomain, res.CreateMissing[0].Domain)
}

func TestPlanStartRequestsCarrySchedulingInfo(t *testing.T) {
	res := Plan(snapshot([]*modelsv1.DesiredLRPSchedulingInfo{desired("b", freshDomain, 2), desired("a", freshDomain, 1)},
		[]*modelsv1.ActualLRP{actual("b", 1, unclaimed, sinceAgo(time.Minute))}), Options{})
	require.Len(t, res.LRPStarts, 2)
	a, b := res.LRPStarts[0], res.LRPStarts[1]
	assert.Equal(t, "a", a.GetProcessGuid(), "requests are ordered by process guid")
	assert.Equal(t, []int32{0}, a.GetIndices())
	assert.Equal(t, "b", b.GetProcessGuid())
	assert.Equal(t, []int32{0, 1}, b.GetIndices())
	assert.Equal(t, freshDomain, b.GetDomain())
	assert.Equal(t, "preloaded:cflinuxfs4", b.GetRootfs())
	assert.Equal(t, int32(128), b.GetResource().GetMemoryMb())
	assert.Equal(t, int32(256), b.GetResource().GetDiskMb())
	assert.Equal(t, int32(64), b.GetResource().GetMaxPids())
	assert.Equal(t, []string{"zone-tag"}, b.GetPlacementTags())
	assert.Equal(t, []string{"nfs"}, b.GetVolumeDrivers())
}

func TestPlanLRPCounts(t *testing.T) {
	s := snapshot(
		[]*modelsv1.DesiredLRPSchedulingInfo{desired("web", freshDomain, 3), desired("old", staleDomain, 1)},
		[]*modelsv1.ActualLRP{
			actual("web", 0, crashed, crashes(3), sinceAgo(time.Second)),
			actual("web", 1, running, on(goneCell)),
			actual("web", 1, claimed, on("cell-gone-2"), as(suspect)),
			actual("web", 3, running, on(liveCell)),
			actual("old", 0, running, on(liveCell), inDomain(staleDomain)),
			actual("old", 1, running, on(liveCell), inDomain(staleDomain)),
			actual("orphan", 0, running, on(liveCell)),
		})
	s.FreshDomains["other"] = true
	res := Plan(s, Options{})
	assert.Equal(t, LRPCounts{
		Desired: 2, Missing: 1, Extra: 2, Orphaned: 1, Crashed: 1, CrashingDesired: 1,
		SuspectClaimed: 1, Retired: 2, KeptStale: 1, PresentCells: 1, SuspectCells: 2,
	}, res.LRPCounts)
	assert.Equal(t, map[string]bool{freshDomain: true, staleDomain: false, "other": true}, res.Domains)
	assert.Equal(t, []string{"retire orphan/0 ORDINARY", "retire web/3 ORDINARY", "unclaim-replacement web/1 ORDINARY",
		"create-missing web/2 ORDINARY"}, summary(res))
}

func TestPlanDoesNotModifyTheSnapshot(t *testing.T) {
	rows := []*modelsv1.ActualLRP{actual("web", 2, running, on(liveCell)), actual("web", 0, running, on(liveCell))}
	s := snapshot([]*modelsv1.DesiredLRPSchedulingInfo{desired("web", freshDomain, 1)}, rows)
	fresh := cloneFresh(s.FreshDomains)
	Plan(s, Options{})
	assert.Equal(t, int32(2), s.Actual[0].GetIndex(), "snapshot rows keep their order")
	assert.Equal(t, fresh, s.FreshDomains)
}

func TestPlanSurvivesOddRows(t *testing.T) {
	s := snapshot([]*modelsv1.DesiredLRPSchedulingInfo{desired("web", freshDomain, 1)}, []*modelsv1.ActualLRP{
		{ProcessGuid: "web", Index: -1, Domain: freshDomain, State: running},                  // negative index, no presence
		{ProcessGuid: "web", Index: 0, Domain: freshDomain, State: running},                   // running without a cell
		{ProcessGuid: "web", Index: 0, Domain: freshDomain, State: running, CellId: goneCell}, // duplicate ORDINARY row
	})
	res := Plan(s, Options{})
	assert.Equal(t, []string{"retire web/-1 ORDINARY"}, summary(res))
	assert.NotPanics(t, func() { Plan(Snapshot{}, Options{}) })
}
