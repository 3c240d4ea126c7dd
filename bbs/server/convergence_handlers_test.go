package server_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// snapshot reads a whole snapshot stream.
func (h *harness) snapshot() []*bbsv1.SnapshotResponse {
	h.t.Helper()
	stream, err := h.client.ConvergenceServiceClient.Snapshot(h.ctx(), &bbsv1.SnapshotRequest{})
	require.NoError(h.t, err)
	var msgs []*bbsv1.SnapshotResponse
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return msgs
		}
		require.NoError(h.t, err)
		msgs = append(msgs, m)
	}
}

func TestConvergenceSnapshot(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	_, err := h.client.UpsertDomain(h.ctx(), &bbsv1.UpsertDomainRequest{Domain: testDomain})
	require.NoError(t, err)
	for i := range 3 {
		h.desire(fmt.Sprintf("app-%d", i), 500)
	}
	h.claim("app-0", 0, "cell-1")
	h.start("app-0", 0, "cell-1")
	h.desireTask("task-1", "https://cc.example.com/tasks/1")

	msgs := h.snapshot()
	require.Len(t, msgs, 5, "first message, scheduling infos, two batches of actual LRPs, tasks")

	first := msgs[0]
	require.NotZero(t, first.GetTakenAt())
	require.Equal(t, []string{testDomain}, first.GetFreshDomains())
	require.Len(t, first.GetCells(), 1)
	require.Equal(t, "cell-1", first.GetCells()[0].GetCellId())

	require.Len(t, msgs[1].GetSchedulingInfos(), 3)
	require.Equal(t, int32(500), msgs[1].GetSchedulingInfos()[0].GetInstances())
	require.Len(t, msgs[2].GetActualLrps(), 1000)
	require.Len(t, msgs[3].GetActualLrps(), 500)
	running := msgs[2].GetActualLrps()[0]
	require.Equal(t, "app-0", running.GetProcessGuid())
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, running.GetState())
	require.Equal(t, "cell-1", running.GetCellId())

	require.Len(t, msgs[4].GetTasks(), 1)
	task := msgs[4].GetTasks()[0]
	require.Equal(t, "task-1", task.GetTaskGuid())
	require.Equal(t, "https://cc.example.com/tasks/1", task.GetTaskDefinition().GetCompletionCallbackUrl())
	require.Nil(t, task.GetTaskDefinition().GetAction(), "the definition carries only the callback URL")
	require.Empty(t, task.GetTaskDefinition().GetRootfs())
}
