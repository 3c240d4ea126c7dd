package plan

import (
	"testing"
	"time"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromResponses(t *testing.T) {
	d := desired("web", freshDomain, 1)
	a0, a1 := actual("web", 0, running, on(liveCell)), actual("web", 1, running, on(liveCell))
	tk := task("t", taskPending, "", time.Second, time.Second, 0, "")
	s := FromResponses([]*bbsv1.SnapshotResponse{
		{
			TakenAt:      now.UnixNano(),
			FreshDomains: []string{freshDomain, "other"},
			Cells:        []*modelsv1.CellPresence{{CellId: liveCell}, nil},
		},
		nil,
		{SchedulingInfos: []*modelsv1.DesiredLRPSchedulingInfo{d, nil}, ActualLrps: []*modelsv1.ActualLRP{a0}},
		{TakenAt: now.Add(time.Hour).UnixNano(), Paused: true, ActualLrps: []*modelsv1.ActualLRP{a1}, Tasks: []*modelsv1.Task{tk}},
	})
	assert.True(t, s.TakenAt.Equal(now), "the first taken_at wins")
	assert.Equal(t, map[string]bool{freshDomain: true, "other": true}, s.FreshDomains)
	require.Contains(t, s.Cells, liveCell)
	assert.Len(t, s.Cells, 1)
	assert.Equal(t, []*modelsv1.DesiredLRPSchedulingInfo{d}, s.Desired)
	assert.Equal(t, []*modelsv1.ActualLRP{a0, a1}, s.Actual)
	assert.Equal(t, []*modelsv1.Task{tk}, s.Tasks)
	assert.True(t, s.Paused, "a paused message pauses the snapshot")

	empty := FromResponses(nil)
	assert.True(t, empty.TakenAt.IsZero())
	assert.NotNil(t, empty.FreshDomains)
	assert.NotNil(t, empty.Cells)
	assert.False(t, empty.Paused)
}

func TestPlanPausedBySnapshotOrOptions(t *testing.T) {
	// An extra index in a fresh domain: retired unless paused by either source.
	base := snapshot([]*modelsv1.DesiredLRPSchedulingInfo{desired("web", freshDomain, 1)},
		[]*modelsv1.ActualLRP{actual("web", 0, running, on(liveCell)), actual("web", 1, running, on(liveCell))})
	tests := []struct {
		name           string
		snapshotPaused bool
		optsPaused     bool
		want           []string
		wantKept       int
	}{
		{"neither paused retires", false, false, []string{"retire web/1 ORDINARY"}, 0},
		{"snapshot paused keeps", true, false, []string{}, 1},
		{"options paused keeps", false, true, []string{}, 1},
		{"both paused keeps", true, true, []string{}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.Paused = tt.snapshotPaused
			res := Plan(s, Options{Paused: tt.optsPaused})
			assert.Equal(t, tt.want, summary(res))
			assert.Equal(t, tt.wantKept, res.LRPCounts.KeptPaused)
		})
	}
}

func TestWithoutIndices(t *testing.T) {
	starts := []*modelsv1.LRPStartRequest{
		{ProcessGuid: "a", Indices: []int32{0, 1, 2}, Rootfs: "r", Resource: &modelsv1.Resource{MemoryMb: 1}},
		{ProcessGuid: "b", Indices: []int32{4}},
	}
	out := WithoutIndices(starts, func(guid string, i int32) bool { return (guid == "a" && i == 1) || guid == "b" })
	require.Len(t, out, 1)
	assert.Equal(t, []int32{0, 2}, out[0].GetIndices())
	assert.Equal(t, "r", out[0].GetRootfs())
	assert.Equal(t, int32(1), out[0].GetResource().GetMemoryMb())
	assert.Equal(t, []int32{0, 1, 2}, starts[0].GetIndices(), "input unchanged")
}

func TestOptionsDefaults(t *testing.T) {
	got := Options{Paused: true, KickTask: time.Second}.withDefaults()
	want := DefaultOptions()
	want.Paused, want.KickTask = true, time.Second
	assert.Equal(t, want, got)
}
