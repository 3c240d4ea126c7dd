package commands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/ctl/commands"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

func TestCellStates(t *testing.T) {
	var rep1 *fakeRep
	ft := startFakeBBS(t, func(f *fakeBBS) {
		rep1 = startFakeRep(t, f.pki, &fakeRep{state: &repv1.StateResponse{
			CellId:             "cell-1",
			Zone:               "z1",
			AvailableResources: &modelsv1.CellCapacity{MemoryMb: 3072, DiskMb: 7000, Containers: 97},
			TotalResources:     &modelsv1.CellCapacity{MemoryMb: 4096, DiskMb: 8192, Containers: 100},
			Lrps: []*repv1.LRPAllocation{
				{ProcessGuid: "app", Index: 0, State: "RUNNING"},
				{ProcessGuid: "app", Index: 1, State: "CLAIMED"},
			},
			Tasks:      []*repv1.TaskAllocation{{TaskGuid: "t1", State: "RUNNING"}},
			StartCount: 1,
		}})
		f.cells = []*modelsv1.CellPresence{
			{CellId: "cell-2", Zone: "z2", RepAddress: unreachableAddress(t)},
			{CellId: "cell-1", Zone: "z1", RepAddress: rep1.addr},
		}
	})

	res := run(t, ft.env, "cell-states", "--timeout", "3s")
	require.Equal(t, commands.ExitFailure, res.code, "a rep that does not answer fails the command")
	require.Contains(t, res.stderr, "1 of 2 reps did not answer: cell-2")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 3)
	require.Regexp(t, `^CELL_ID\s+ZONE\s+MEMORY_MB\s+DISK_MB\s+CONTAINERS\s+LRPS\s+TASKS\s+STARTING\s+EVACUATING\s+ERROR$`, lines[0])
	require.Regexp(t, `^cell-1\s+z1\s+3072/4096\s+7000/8192\s+97/100\s+2\s+1\s+1\s+false\s+-$`, lines[1])
	require.Regexp(t, `^cell-2\s+z2\s+-\s+-\s+-\s+-\s+-\s+-\s+-\s+\S+`, lines[2])
	require.IsType(t, &repv1.StateRequest{}, rep1.recorded()[0])

	res = run(t, ft.env, "cell-states", "--json", "--timeout", "3s")
	require.Equal(t, commands.ExitFailure, res.code)
	lines = strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 2)
	var first struct {
		CellID string `json:"cell_id"`
		State  struct {
			Available struct {
				MemoryMB int `json:"memory_mb"`
			} `json:"available_resources"`
			Lrps []map[string]any `json:"lrps"`
		} `json:"state"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, "cell-1", first.CellID)
	require.Equal(t, 3072, first.State.Available.MemoryMB)
	require.Len(t, first.State.Lrps, 2)
	var second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	require.Equal(t, "cell-2", second["cell_id"])
	require.NotEmpty(t, second["error"])
}

func TestCellStatesAllAnswer(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) {
		rep := startFakeRep(t, f.pki, &fakeRep{state: &repv1.StateResponse{CellId: "cell-1", Zone: "z1"}})
		f.cells = []*modelsv1.CellPresence{{CellId: "cell-1", Zone: "z1", RepAddress: rep.addr}}
	})
	res := run(t, ft.env, "cell-states")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "cell-1")
}

// logFixture is an LRP with instances on two cells and a task on the first.
func logFixture(t *testing.T) (*fakeTarget, *fakeRep, *fakeRep) {
	t.Helper()
	var rep1, rep2 *fakeRep
	ft := startFakeBBS(t, func(f *fakeBBS) {
		rep1 = startFakeRep(t, f.pki, &fakeRep{lines: []*repv1.LogLine{
			{ContainerGuid: "i0", ProcessGuid: "app", Index: 0, Source: "APP", Text: "zero second", Timestamp: logTime(2 * time.Second)},
			{ContainerGuid: "i0", ProcessGuid: "app", Index: 0, Source: "APP", Text: "zero first", Timestamp: logTime(0)},
			{ContainerGuid: "job", Source: "TASK", Text: "task says hi", Timestamp: logTime(time.Second)},
		}, followLines: []*repv1.LogLine{
			{ContainerGuid: "i0", ProcessGuid: "app", Index: 0, Source: "APP", Text: "zero later", Timestamp: logTime(time.Minute)},
		}})
		rep2 = startFakeRep(t, f.pki, &fakeRep{lines: []*repv1.LogLine{
			{ContainerGuid: "i1", ProcessGuid: "app", Index: 1, Source: "HEALTH", Text: "one", Timestamp: logTime(time.Second)},
		}, followLines: []*repv1.LogLine{
			{ContainerGuid: "i1", ProcessGuid: "app", Index: 1, Source: "APP", Text: "one later", Timestamp: logTime(time.Minute)},
		}})
		f.cells = []*modelsv1.CellPresence{
			{CellId: "cell-1", RepAddress: rep1.addr},
			{CellId: "cell-2", RepAddress: rep2.addr},
			{CellId: "cell-3", RepAddress: unreachableAddress(t)},
		}
		f.actual = []*modelsv1.ActualLRP{
			{ProcessGuid: "app", Index: 0, CellId: "cell-1", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING},
			{ProcessGuid: "app", Index: 1, CellId: "cell-2", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING},
			{ProcessGuid: "app", Index: 2, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED},
		}
		f.tasks = []*modelsv1.Task{{TaskGuid: "job", CellId: "cell-1"}, {TaskGuid: "pending"}}
	})
	return ft, rep1, rep2
}

func TestLogs(t *testing.T) {
	ft, rep1, rep2 := logFixture(t)

	res := run(t, ft.env, "logs", "app")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "2026-11-22T12:00:00.000Z [APP/0] zero first\n"+
		"2026-11-22T12:00:01.000Z [HEALTH/1] one\n"+
		"2026-11-22T12:00:02.000Z [APP/0] zero second\n", res.stdout, "lines of all cells in time order")
	req := rep1.recorded()[0].(*repv1.StreamLogsRequest)
	require.Equal(t, "app", req.GetProcessGuid())
	require.Nil(t, req.Index)
	require.False(t, req.GetFollow())

	res = run(t, ft.env, "logs", "app", "--index", "1")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "2026-11-22T12:00:01.000Z [HEALTH/1] one\n", res.stdout)
	require.Len(t, rep1.recorded(), 1, "cell-1 holds no index 1 and is not asked")
	require.Equal(t, int32(1), rep2.recorded()[1].(*repv1.StreamLogsRequest).GetIndex())

	res = run(t, ft.env, "logs", "job")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "2026-11-22T12:00:01.000Z [TASK] task says hi\n", res.stdout)
	require.Equal(t, "job", rep1.recorded()[1].(*repv1.StreamLogsRequest).GetTaskGuid())
	require.True(t, slices.ContainsFunc(ft.bbs.recorded(), func(m proto.Message) bool {
		r, ok := m.(*bbsv1.GetTaskRequest)
		return ok && r.GetTaskGuid() == "job"
	}), "the task's cell comes from GetTask")

	res = run(t, ft.env, "logs", "app", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.Split(res.stdout, "\n")[0]), &line))
	require.Equal(t, "zero first", line["text"])
	require.Equal(t, "APP", line["source"])
}

func TestLogsErrors(t *testing.T) {
	ft, _, _ := logFixture(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"logs", "nothing"}, "ResourceNotFound: no LRP or task nothing"},
		{[]string{"logs", "pending"}, "pending is not placed on any cell"},
		{[]string{"logs", "app", "--index", "2"}, "app is not placed on any cell"},
		{[]string{"logs", "app", "--index", "7"}, "no actual LRP app with index 7"},
	}
	for _, tt := range tests {
		res := run(t, ft.env, tt.args...)
		require.Equal(t, commands.ExitFailure, res.code, "%v: %s", tt.args, res.stdout)
		require.Contains(t, res.stderr, tt.want, "%v", tt.args)
	}
}

// TestLogsFollowMergesCells follows two cells and stops at the interrupt.
func TestLogsFollowMergesCells(t *testing.T) {
	ft, _, _ := logFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan int, 1)
	go func() { done <- commands.Run(ctx, []string{"logs", "app", "--follow"}, out, out, ft.env) }()
	require.Eventually(t, func() bool {
		s := out.String()
		return strings.Contains(s, "[APP/0] zero later") && strings.Contains(s, "[APP/1] one later")
	}, 10*time.Second, 10*time.Millisecond, "output so far: %s", out)
	for _, want := range []string{"[APP/0] zero first", "[HEALTH/1] one", "[APP/0] zero second"} {
		require.Contains(t, out.String(), want)
	}
	cancel()
	select {
	case code := <-done:
		require.Equal(t, commands.ExitOK, code, out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("logs --follow did not stop when interrupted")
	}
}

// lockedBuffer is a bytes.Buffer safe for one writer and a polling reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
