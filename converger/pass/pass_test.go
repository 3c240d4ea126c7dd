package pass

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

var takenAt = time.Unix(1_700_000_000, 0)

const (
	fresh    = "cf-apps"
	live     = "cell-live"
	running  = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	ordinary = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY
)

func desiredLRP(guid string, n int32) *modelsv1.DesiredLRPSchedulingInfo {
	return &modelsv1.DesiredLRPSchedulingInfo{ProcessGuid: guid, Domain: fresh, Instances: n,
		ModificationTag: &modelsv1.ModificationTag{Epoch: "d-" + guid, Index: 1}}
}

func runningLRP(guid string, index int32, domain string) *modelsv1.ActualLRP {
	return &modelsv1.ActualLRP{ProcessGuid: guid, Index: index, Domain: domain, State: running, Presence: ordinary,
		CellId: live, InstanceGuid: fmt.Sprintf("ig-%s-%d", guid, index), Since: takenAt.Add(-time.Minute).UnixNano(),
		ModificationTag: &modelsv1.ModificationTag{Epoch: "a-" + guid, Index: 3}}
}

// world is a snapshot needing three actions: web/1 is missing (create), orphan/0 has
// no desired LRP in a fresh domain (retire), task t-1 is pending (kick). The domain
// "old" has a DesiredLRP but is stale.
func world(paused bool) []*bbsv1.SnapshotResponse {
	return []*bbsv1.SnapshotResponse{
		{TakenAt: takenAt.UnixNano(), FreshDomains: []string{fresh}, Paused: paused,
			Cells: []*modelsv1.CellPresence{{CellId: live}}},
		{SchedulingInfos: []*modelsv1.DesiredLRPSchedulingInfo{desiredLRP("web", 2), {ProcessGuid: "legacy", Domain: "old", Instances: 0}}},
		{ActualLrps: []*modelsv1.ActualLRP{runningLRP("web", 0, fresh), runningLRP("orphan", 0, fresh)}},
		{Tasks: []*modelsv1.Task{{TaskGuid: "t-1", Domain: fresh, State: modelsv1.TaskState_TASK_STATE_PENDING,
			CreatedAt: takenAt.Add(-time.Second).UnixNano(), UpdatedAt: takenAt.Add(-time.Second).UnixNano()}}},
	}
}

func TestRunAppliesThePlanAndReports(t *testing.T) {
	bbs := &fakeBBS{snapshot: world(false), refuse: map[string]string{"task is still pending": "task moved on"}}
	logs := &logLines{}
	r := New(bbs, Options{Owner: "converger-1", Logger: logs.logger()})

	sum, err := r.Run(context.Background())
	require.NoError(t, err)

	require.Len(t, bbs.lrpCalls, 1)
	require.Len(t, bbs.lrpCalls[0], 2)
	assert.Equal(t, "orphan", bbs.lrpCalls[0][0].GetRetire().GetKey().GetProcessGuid(), "retire goes first")
	assert.Equal(t, "a-orphan", bbs.lrpCalls[0][0].GetRetire().GetModificationTag().GetEpoch())
	assert.Equal(t, int32(1), bbs.lrpCalls[0][1].GetCreateMissing().GetKey().GetIndex())
	require.Len(t, bbs.taskCalls, 1)
	assert.Equal(t, "t-1", bbs.taskCalls[0][0].GetKick().GetTaskGuid())
	assert.Equal(t, 2, sum.Applied)
	assert.Equal(t, 1, sum.Refused)
	assert.Equal(t, []bool{true, true}, bbs.deferred, "every Apply call defers its auctions")
	require.Len(t, bbs.auctions, 1, "one auction request per pass")
	require.Len(t, bbs.auctions[0].GetLrps(), 1)
	assert.Equal(t, "web", bbs.auctions[0].GetLrps()[0].GetProcessGuid())
	assert.Equal(t, []int32{1}, bbs.auctions[0].GetLrps()[0].GetIndices(), "the created index")
	assert.Empty(t, bbs.auctions[0].GetTaskGuids(), "the refused kick is not auctioned")

	actions := logs.messages(t, "converger-action")
	require.Len(t, actions, 3, "one line per action")
	assert.Equal(t, "retire", actions[0]["kind"])
	assert.Equal(t, "orphan/0 ORDINARY", actions[0]["subject"])
	assert.Contains(t, actions[0]["reason"], "no desired LRP")
	assert.Equal(t, "applied", actions[0]["outcome"])
	assert.Equal(t, "create-missing", actions[1]["kind"])
	assert.Equal(t, "kick-task", actions[2]["kind"])
	assert.Equal(t, "refused", actions[2]["outcome"])
	assert.Equal(t, "task moved on", actions[2]["refused_reason"])

	require.Len(t, bbs.reports, 1)
	p := bbs.reports[0]
	assert.Equal(t, "converger-1", p.GetOwner())
	assert.Equal(t, takenAt.UnixNano(), p.GetTakenAt())
	assert.False(t, p.GetPaused())
	assert.Equal(t, int32(2), p.GetDesiredLrps())
	assert.Equal(t, int32(2), p.GetActualLrps())
	assert.Equal(t, int32(1), p.GetMissing())
	assert.Equal(t, int32(1), p.GetOrphaned())
	assert.Equal(t, int32(1), p.GetRetired())
	assert.Equal(t, int32(1), p.GetPresentCells())
	assert.Equal(t, int32(1), p.GetTasksKicked())
	assert.Equal(t, int32(2), p.GetActionsApplied())
	assert.Equal(t, int32(1), p.GetActionsRefused())
	assert.Zero(t, p.GetActionsFailed())
	assert.Equal(t, []string{fresh}, p.GetFreshDomains())
	assert.Positive(t, p.GetSnapshotNanos())
	assert.Empty(t, p.GetError())
}

func TestRunPausedBySnapshotKeepsExtras(t *testing.T) {
	bbs := &fakeBBS{snapshot: world(true)}
	sum, err := New(bbs, Options{}).Run(context.Background())
	require.NoError(t, err)
	require.Len(t, bbs.lrpCalls, 1)
	require.Len(t, bbs.lrpCalls[0], 1, "only the creation: the orphan is kept")
	assert.NotNil(t, bbs.lrpCalls[0][0].GetCreateMissing())
	assert.True(t, bbs.reports[0].GetPaused())
	assert.Equal(t, int32(1), bbs.reports[0].GetKeptPaused())
	assert.Equal(t, 1, sum.Result.LRPCounts.KeptPaused)
}

func TestRunSendsLargePlansInChunks(t *testing.T) {
	bbs := &fakeBBS{snapshot: []*bbsv1.SnapshotResponse{
		{TakenAt: takenAt.UnixNano(), FreshDomains: []string{fresh}},
		{SchedulingInfos: []*modelsv1.DesiredLRPSchedulingInfo{desiredLRP("web", 5)}},
	}}
	sum, err := New(bbs, Options{ChunkSize: 2}).Run(context.Background())
	require.NoError(t, err)
	var sizes []int
	for _, c := range bbs.lrpCalls {
		sizes = append(sizes, len(c))
	}
	assert.Equal(t, []int{2, 2, 1}, sizes)
	assert.Empty(t, bbs.taskCalls, "no task call without task actions")
	assert.Equal(t, 5, sum.Applied)
}

func TestRunReportsAFailedSnapshot(t *testing.T) {
	bbs := &fakeBBS{snapshotErr: errors.New("bbs down")}
	sum, err := New(bbs, Options{Owner: "c"}).Run(context.Background())
	require.ErrorContains(t, err, "snapshot: bbs down")
	assert.False(t, sum.Planned)
	assert.Empty(t, bbs.lrpCalls)
	require.Len(t, bbs.reports, 1)
	assert.Equal(t, "snapshot: bbs down", bbs.reports[0].GetError())
	assert.Equal(t, "c", bbs.reports[0].GetOwner())
}

func TestRunCountsFailedApplyCalls(t *testing.T) {
	bbs := &fakeBBS{snapshot: world(false), lrpErr: errors.New("unavailable")}
	logs := &logLines{}
	sum, err := New(bbs, Options{Logger: logs.logger()}).Run(context.Background())
	require.ErrorContains(t, err, "apply lrp actions: unavailable")
	assert.Equal(t, 2, sum.Failed)
	assert.Equal(t, 1, sum.Applied, "task actions are still applied")
	require.Len(t, bbs.taskCalls, 1)
	failed := logs.messages(t, "converger-action")
	require.Len(t, failed, 3)
	assert.Equal(t, "error", failed[0]["outcome"])
	assert.Equal(t, "unavailable", failed[0]["error"])
	p := bbs.reports[0]
	assert.Equal(t, int32(2), p.GetActionsFailed())
	assert.Contains(t, p.GetError(), "unavailable")
}

func TestRunReturnsAReportFailure(t *testing.T) {
	bbs := &fakeBBS{snapshot: world(false), reportErr: errors.New("unimplemented")}
	_, err := New(bbs, Options{}).Run(context.Background())
	require.ErrorContains(t, err, "report pass: unimplemented")
	assert.Len(t, bbs.lrpCalls, 1, "the plan was applied before the report")
}

func TestRunSetsMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	bbs := &fakeBBS{snapshot: world(false), refuse: map[string]string{"task is still pending": "moved"}}
	_, err = New(bbs, Options{Metrics: m}).Run(context.Background())
	require.NoError(t, err)

	gauge := func(name string) float64 { return testutil.ToFloat64(m.last[name]) }
	assert.Equal(t, 2.0, gauge("desired"))
	assert.Equal(t, 1.0, gauge("missing"))
	assert.Equal(t, 1.0, gauge("orphaned"))
	assert.Equal(t, 1.0, gauge("retired"))
	assert.Equal(t, 1.0, gauge("present_cells"))
	assert.Equal(t, 1.0, gauge("tasks_pending"))
	assert.Equal(t, 1.0, gauge("tasks_kicked"))
	assert.Equal(t, 0.0, gauge("paused"))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.domains.WithLabelValues(fresh)))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.domains.WithLabelValues("old")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.actions.WithLabelValues("retire", "applied")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.actions.WithLabelValues("kick-task", "refused")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.passes.WithLabelValues("ok")))
	assert.Equal(t, 1, testutil.CollectAndCount(m.duration))

	// The next snapshot is paused and names no stale domain: "old" is dropped.
	next := world(true)
	next[1].SchedulingInfos = next[1].SchedulingInfos[:1]
	bbs.snapshot = next
	_, err = New(bbs, Options{Metrics: m}).Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1.0, gauge("paused"))
	assert.Equal(t, 1, testutil.CollectAndCount(m.domains), "only the fresh domain is left")

	bbs.snapshotErr = errors.New("down")
	_, err = New(bbs, Options{Metrics: m}).Run(context.Background())
	require.Error(t, err)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.passes.WithLabelValues("error")))
	assert.Equal(t, 1.0, gauge("last_pass_failed"))
	assert.Equal(t, 1.0, gauge("desired"), "a failed snapshot keeps the last planned figures")

	names, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range names {
		assert.Regexp(t, "^drover_converger_", mf.GetName())
	}
}

func TestPartitionIndices(t *testing.T) {
	keys := []string{"a", "b", "a", "c", "b", "a"}
	key := func(i int) string { return keys[i] }
	tests := []struct {
		name    string
		n       int
		streams int
	}{
		{"one stream keeps everything in order", 6, 1},
		{"more streams than items", 6, 10},
		{"several streams", 6, 2},
		{"no items", 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := partitionIndices(tt.n, tt.streams, key)
			assert.LessOrEqual(t, len(parts), max(1, min(tt.streams, tt.n)))
			seen := map[int]bool{}
			streamOf := map[string]int{}
			for s, p := range parts {
				assert.NotEmpty(t, p)
				assert.IsIncreasing(t, p, "plan order kept")
				for _, i := range p {
					seen[i] = true
					if prev, ok := streamOf[keys[i]]; ok {
						assert.Equal(t, prev, s, "one key, one stream")
					}
					streamOf[keys[i]] = s
				}
			}
			assert.Len(t, seen, tt.n, "every item once")
		})
	}
}

func TestRunAppliesProcessesInParallelStreams(t *testing.T) {
	infos := []*modelsv1.DesiredLRPSchedulingInfo{}
	for i := range 8 {
		infos = append(infos, desiredLRP(fmt.Sprintf("app-%d", i), 3))
	}
	bbs := &fakeBBS{snapshot: []*bbsv1.SnapshotResponse{{TakenAt: takenAt.UnixNano()}, {SchedulingInfos: infos}}}
	logs := &logLines{}
	sum, err := New(bbs, Options{Workers: 3, ChunkSize: 2, Logger: logs.logger()}).Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 24, sum.Applied)
	// Each process's indices arrive in order, in one stream.
	next := map[string]int32{}
	for _, call := range bbs.lrpCalls {
		for _, a := range call {
			k := a.GetCreateMissing().GetKey()
			assert.Equal(t, next[k.GetProcessGuid()], k.GetIndex(), "%s in order", k.GetProcessGuid())
			next[k.GetProcessGuid()]++
		}
	}
	// Log lines follow the plan order whatever the calls' timing.
	lines := logs.messages(t, "converger-action")
	require.Len(t, lines, 24)
	assert.Equal(t, "app-0/0 ORDINARY", lines[0]["subject"])
	assert.Equal(t, "app-7/2 ORDINARY", lines[23]["subject"])
}
