package server_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// taskBatchesReceived returns the task guids of each task auction request so far.
func (f *fakeAuctioneer) taskBatchesReceived() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.taskBatches)
}

// taskCondition is the condition a plan would carry for task t.
func taskCondition(t *modelsv1.Task) *bbsv1.TaskRowCondition {
	return &bbsv1.TaskRowCondition{TaskGuid: t.GetTaskGuid(), State: t.GetState(), UpdatedAt: t.GetUpdatedAt()}
}

// storedTask puts a task in the store (no side effects) and moves it through the
// given states on cell-1.
func (h *harness) storedTask(guid, callbackURL string, to modelsv1.TaskState) *modelsv1.Task {
	h.t.Helper()
	ctx := h.ctx()
	task, err := h.db.DesireTask(ctx, guid, testDomain, taskDefinition(callbackURL))
	require.NoError(h.t, err)
	if to == modelsv1.TaskState_TASK_STATE_PENDING {
		return task
	}
	_, _, err = h.db.StartTask(ctx, guid, "cell-1")
	require.NoError(h.t, err)
	change, err := h.db.CompleteTask(ctx, guid, "cell-1", false, "", "result")
	require.NoError(h.t, err)
	if to == modelsv1.TaskState_TASK_STATE_COMPLETED {
		return change.After
	}
	change, err = h.db.ResolvingTask(ctx, guid)
	require.NoError(h.t, err)
	return change.After
}

func TestApplyTaskActions(t *testing.T) {
	h := newHarness(t)
	accepted := newCallbackReceiver(t, http.StatusOK)
	pending := modelsv1.TaskState_TASK_STATE_PENDING
	kick1 := h.storedTask("kick-1", "", pending)
	kick2 := h.storedTask("kick-2", "", pending)
	stale := taskCondition(h.storedTask("kick-stale", "", pending))
	stale.UpdatedAt--
	fail := h.storedTask("fail-1", accepted.URL, pending)
	resolving := h.storedTask("resolving-1", "", modelsv1.TaskState_TASK_STATE_RESOLVING)
	completed := h.storedTask("completed-1", "", modelsv1.TaskState_TASK_STATE_COMPLETED)
	retry := h.storedTask("retry-1", accepted.URL, modelsv1.TaskState_TASK_STATE_COMPLETED)

	resp, err := h.client.ConvergenceServiceClient.ApplyTaskActions(h.ctx(), &bbsv1.ApplyTaskActionsRequest{Actions: []*bbsv1.TaskAction{
		{Reason: "pending", Action: &bbsv1.TaskAction_Kick{Kick: taskCondition(kick1)}},
		{Reason: "pending", Action: &bbsv1.TaskAction_Kick{Kick: stale}},
		{Reason: "expired", Action: &bbsv1.TaskAction_Fail{Fail: &bbsv1.FailTaskAction{
			Task: taskCondition(fail), FailureReason: "not started within time limit"}}},
		{Reason: "stuck", Action: &bbsv1.TaskAction_DemoteResolving{DemoteResolving: taskCondition(resolving)}},
		{Reason: "old", Action: &bbsv1.TaskAction_DeleteCompleted{DeleteCompleted: taskCondition(completed)}},
		{Reason: "callback", Action: &bbsv1.TaskAction_RetryCallback{RetryCallback: taskCondition(retry)}},
		{Reason: "pending", Action: &bbsv1.TaskAction_Kick{Kick: taskCondition(kick2)}},
		{Reason: "malformed", Action: &bbsv1.TaskAction_Kick{Kick: &bbsv1.TaskRowCondition{State: pending}}},
	}})
	require.NoError(t, err)
	results := resp.GetResults()
	require.Len(t, results, 8)
	for i, applied := range []bool{true, false, true, true, true, true, true, false} {
		require.Equal(t, applied, results[i].GetApplied(), "result %d: %s", i, results[i].GetRefusedReason())
	}
	require.Contains(t, results[1].GetRefusedReason(), "task moved on")
	require.Contains(t, results[7].GetRefusedReason(), "kick.task_guid is required")

	t.Run("kicked tasks go to the auctioneer in one request", func(t *testing.T) {
		h.eventually(func() bool { return len(h.auctioneer.taskBatchesReceived()) > 0 }, "a task auction request")
		h.server.Wait()
		require.Equal(t, [][]string{{"kick-1", "kick-2"}}, h.auctioneer.taskBatchesReceived())
		h.auctioneer.mu.Lock()
		defer h.auctioneer.mu.Unlock()
		for _, req := range h.auctioneer.tasks {
			require.Equal(t, taskDefinition("").GetMemoryMb(), req.GetResource().GetMemoryMb(), "built from the stored definition")
			require.Equal(t, taskDefinition("").GetRootfs(), req.GetRootfs())
		}
	})

	t.Run("failed and retried tasks run their callbacks", func(t *testing.T) {
		h.server.Wait()
		byGuid := map[string]string{}
		for _, c := range accepted.calls() {
			byGuid[c.TaskGuid] = c.FailureReason
		}
		require.Equal(t, map[string]string{"fail-1": "not started within time limit", "retry-1": ""}, byGuid)
		for _, guid := range []string{"fail-1", "retry-1"} {
			_, err := h.task(guid)
			requireCode(t, err, codes.NotFound)
		}
	})

	t.Run("demoted and deleted tasks", func(t *testing.T) {
		task, err := h.task("resolving-1")
		require.NoError(t, err)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_COMPLETED, task.GetState())
		_, err = h.task("completed-1")
		requireCode(t, err, codes.NotFound)
		task, err = h.task("kick-stale")
		require.NoError(t, err)
		require.Equal(t, pending, task.GetState())
	})
}

func TestApplyTaskActionsWithoutKicksSendsNoAuction(t *testing.T) {
	h := newHarness(t)
	completed := h.storedTask("completed-1", "", modelsv1.TaskState_TASK_STATE_COMPLETED)
	resp, err := h.client.ConvergenceServiceClient.ApplyTaskActions(h.ctx(), &bbsv1.ApplyTaskActionsRequest{Actions: []*bbsv1.TaskAction{
		{Reason: "old", Action: &bbsv1.TaskAction_DeleteCompleted{DeleteCompleted: taskCondition(completed)}},
	}})
	require.NoError(t, err)
	require.True(t, resp.GetResults()[0].GetApplied())
	h.server.Wait()
	require.Empty(t, h.auctioneer.taskBatchesReceived())
}
