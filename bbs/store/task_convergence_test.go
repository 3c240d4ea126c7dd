package store_test

import (
	"testing"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

// taskCondition is the condition a plan would carry for task t.
func taskCondition(t *modelsv1.Task) *bbsv1.TaskRowCondition {
	return &bbsv1.TaskRowCondition{TaskGuid: t.GetTaskGuid(), State: t.GetState(), UpdatedAt: t.GetUpdatedAt()}
}

// movedOn is a condition whose updated_at no longer matches the task.
func movedOn(t *modelsv1.Task) *bbsv1.TaskRowCondition {
	c := taskCondition(t)
	c.UpdatedAt--
	return c
}

// taskInState desires a task and moves it to state, a second of store time per step.
func taskInState(t *testing.T, s *store.Postgres, clock *storetest.Clock, guid string, state modelsv1.TaskState) *modelsv1.Task {
	t.Helper()
	ctx := testContext(t)
	task, err := s.DesireTask(ctx, guid, "cf-tasks", newTaskDefinition())
	require.NoError(t, err)
	steps := []struct {
		to   modelsv1.TaskState
		step func() (*store.TaskChange, error)
	}{
		{taskRunning, func() (*store.TaskChange, error) {
			c, _, err := s.StartTask(ctx, guid, "cell-a")
			return c, err
		}},
		{taskCompleted, func() (*store.TaskChange, error) { return s.CompleteTask(ctx, guid, "cell-a", false, "", "done") }},
		{taskResolving, func() (*store.TaskChange, error) { return s.ResolvingTask(ctx, guid) }},
	}
	for _, st := range steps {
		if task.State == state {
			break
		}
		clock.Advance(time.Second)
		change, err := st.step()
		require.NoError(t, err)
		task = change.After
	}
	require.Equal(t, state, task.State)
	return task
}

// applyTask applies a task action and fails the test on error.
func applyTask(t *testing.T, s *store.Postgres, a *bbsv1.TaskAction) *store.TaskActionOutcome {
	t.Helper()
	outcome, err := s.ApplyTaskAction(testContext(t), a)
	require.NoError(t, err)
	return outcome
}

// requireTaskRefusedWithoutHarm applies an action that must be refused and checks that
// no task and no event changed.
func requireTaskRefusedWithoutHarm(t *testing.T, s *store.Postgres, a *bbsv1.TaskAction, reason string) {
	t.Helper()
	before, err := s.ListTasks(testContext(t), store.TaskFilter{})
	require.NoError(t, err)
	seq := latest(t, s)
	outcome := applyTask(t, s, a)
	require.Contains(t, outcome.Refused, reason)
	require.Nil(t, outcome.Auction)
	require.Nil(t, outcome.Callback)
	after, err := s.ListTasks(testContext(t), store.TaskFilter{})
	require.NoError(t, err)
	requireProtosEqual(t, before, after)
	require.Equal(t, seq, latest(t, s), "no events")
}

func failAction(c *bbsv1.TaskRowCondition, reason string) *bbsv1.TaskAction {
	return &bbsv1.TaskAction{Reason: "expired", Action: &bbsv1.TaskAction_Fail{Fail: &bbsv1.FailTaskAction{Task: c, FailureReason: reason}}}
}

func kickAction(c *bbsv1.TaskRowCondition) *bbsv1.TaskAction {
	return &bbsv1.TaskAction{Reason: "pending", Action: &bbsv1.TaskAction_Kick{Kick: c}}
}

func demoteAction(c *bbsv1.TaskRowCondition) *bbsv1.TaskAction {
	return &bbsv1.TaskAction{Reason: "stuck", Action: &bbsv1.TaskAction_DemoteResolving{DemoteResolving: c}}
}

func deleteCompletedAction(c *bbsv1.TaskRowCondition) *bbsv1.TaskAction {
	return &bbsv1.TaskAction{Reason: "old", Action: &bbsv1.TaskAction_DeleteCompleted{DeleteCompleted: c}}
}

func retryCallbackAction(c *bbsv1.TaskRowCondition) *bbsv1.TaskAction {
	return &bbsv1.TaskAction{Reason: "callback", Action: &bbsv1.TaskAction_RetryCallback{RetryCallback: c}}
}

func TestApplyTaskActionFail(t *testing.T) {
	t.Parallel()
	for _, state := range []modelsv1.TaskState{taskPending, taskRunning} {
		t.Run(state.String(), func(t *testing.T) {
			t.Parallel()
			s, clock := newStoreWithClock(t)
			task := taskInState(t, s, clock, "t", state)

			requireTaskRefusedWithoutHarm(t, s, failAction(movedOn(task), "lost"), "task moved on")
			stale := taskCondition(task)
			stale.State = taskCompleted
			requireTaskRefusedWithoutHarm(t, s, failAction(stale, "lost"), "task moved on: state TASK_STATE_"+state.String()[len("TASK_STATE_"):])

			clock.Advance(time.Second)
			seq := latest(t, s)
			outcome := applyTask(t, s, failAction(taskCondition(task), "cell disappeared before completion"))
			require.Empty(t, outcome.Refused)
			require.Nil(t, outcome.Auction)
			got, err := s.GetTask(testContext(t), "t")
			require.NoError(t, err)
			require.Equal(t, taskCompleted, got.State)
			require.True(t, got.Failed)
			require.Equal(t, "cell disappeared before completion", got.FailureReason)
			require.Empty(t, got.CellId)
			require.Equal(t, clock.Now().UnixNano(), got.UpdatedAt)
			require.Equal(t, clock.Now().UnixNano(), got.FirstCompletedAt)
			requireProtoEqual(t, got, outcome.Callback)
			require.Equal(t, []string{models.EventTypeTaskChanged}, eventTypes(t, s, seq))

			requireTaskRefusedWithoutHarm(t, s, failAction(taskCondition(got), "again"), "fail applies to PENDING and RUNNING tasks")
		})
	}
}

func TestApplyTaskActionFailWithoutFailureReasonUsesTheActionReason(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	task := taskInState(t, s, clock, "t", taskPending)
	outcome := applyTask(t, s, failAction(taskCondition(task), ""))
	require.Empty(t, outcome.Refused)
	require.Equal(t, "expired", outcome.Callback.FailureReason)
}

func TestApplyTaskActionKick(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	task := taskInState(t, s, clock, "t", taskPending)

	requireTaskRefusedWithoutHarm(t, s, kickAction(movedOn(task)), "task moved on")

	seq := latest(t, s)
	outcome := applyTask(t, s, kickAction(taskCondition(task)))
	require.Empty(t, outcome.Refused)
	require.Nil(t, outcome.Callback)
	requireProtoEqual(t, task, outcome.Auction)
	require.Equal(t, secretEnvValue, outcome.Auction.GetTaskDefinition().GetEnv()[0].GetValue(), "the definition is decrypted")
	require.Empty(t, eventTypes(t, s, seq), "a kick changes no row")
	got, err := s.GetTask(testContext(t), "t")
	require.NoError(t, err)
	requireProtoEqual(t, task, got)

	running := taskInState(t, s, clock, "r", taskRunning)
	requireTaskRefusedWithoutHarm(t, s, kickAction(taskCondition(running)), "kick applies to PENDING tasks, not TASK_STATE_RUNNING")
}

func TestApplyTaskActionDemoteResolving(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	task := taskInState(t, s, clock, "t", taskResolving)

	requireTaskRefusedWithoutHarm(t, s, demoteAction(movedOn(task)), "task moved on")

	clock.Advance(time.Second)
	seq := latest(t, s)
	outcome := applyTask(t, s, demoteAction(taskCondition(task)))
	require.Empty(t, outcome.Refused)
	require.Nil(t, outcome.Callback)
	require.Nil(t, outcome.Auction)
	got, err := s.GetTask(testContext(t), "t")
	require.NoError(t, err)
	require.Equal(t, taskCompleted, got.State)
	require.Equal(t, clock.Now().UnixNano(), got.UpdatedAt)
	require.Equal(t, task.FirstCompletedAt, got.FirstCompletedAt, "first completion time kept")
	require.Equal(t, "done", got.Result)
	require.Equal(t, []string{models.EventTypeTaskChanged}, eventTypes(t, s, seq))

	requireTaskRefusedWithoutHarm(t, s, demoteAction(taskCondition(got)), "demote_resolving applies to RESOLVING tasks")
}

func TestApplyTaskActionDeleteCompleted(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	task := taskInState(t, s, clock, "t", taskCompleted)

	requireTaskRefusedWithoutHarm(t, s, deleteCompletedAction(movedOn(task)), "task moved on")
	resolving := taskInState(t, s, clock, "r", taskResolving)
	requireTaskRefusedWithoutHarm(t, s, deleteCompletedAction(taskCondition(resolving)), "delete_completed applies to COMPLETED tasks")

	seq := latest(t, s)
	outcome := applyTask(t, s, deleteCompletedAction(taskCondition(task)))
	require.Empty(t, outcome.Refused)
	_, err := s.GetTask(testContext(t), "t")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	require.Equal(t, []string{models.EventTypeTaskRemoved}, eventTypes(t, s, seq))

	requireTaskRefusedWithoutHarm(t, s, deleteCompletedAction(taskCondition(task)), `task "t" is gone`)
}

func TestApplyTaskActionRetryCallback(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	task := taskInState(t, s, clock, "t", taskCompleted)

	requireTaskRefusedWithoutHarm(t, s, retryCallbackAction(movedOn(task)), "task moved on")

	seq := latest(t, s)
	outcome := applyTask(t, s, retryCallbackAction(taskCondition(task)))
	require.Empty(t, outcome.Refused)
	requireProtoEqual(t, task, outcome.Callback)
	require.Empty(t, eventTypes(t, s, seq), "the callback worker changes the task, not the action")

	def := newTaskDefinition()
	def.CompletionCallbackUrl = ""
	_, err := s.DesireTask(testContext(t), "no-url", "cf-tasks", def)
	require.NoError(t, err)
	_, _, err = s.StartTask(testContext(t), "no-url", "cell-a")
	require.NoError(t, err)
	change, err := s.CompleteTask(testContext(t), "no-url", "cell-a", false, "", "")
	require.NoError(t, err)
	requireTaskRefusedWithoutHarm(t, s, retryCallbackAction(taskCondition(change.After)), "has no completion callback url")
}

func TestApplyTaskActionRefusesAGoneTask(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	gone := &bbsv1.TaskRowCondition{TaskGuid: "gone", State: taskPending, UpdatedAt: 1}
	for _, a := range []*bbsv1.TaskAction{failAction(gone, "x"), kickAction(gone), demoteAction(gone), deleteCompletedAction(gone), retryCallbackAction(gone)} {
		requireTaskRefusedWithoutHarm(t, s, a, `task "gone" is gone`)
	}
}

func TestApplyTaskActionRejectsMalformedActions(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	tests := []struct {
		name   string
		action *bbsv1.TaskAction
		field  string
	}{
		{"no action", &bbsv1.TaskAction{Reason: "x"}, "task action has no action set"},
		{"no condition", kickAction(nil), "kick is required"},
		{"no fail task", failAction(nil, "x"), "fail is required"},
		{"no guid", demoteAction(&bbsv1.TaskRowCondition{State: taskResolving}), "demote_resolving.task_guid is required"},
		{"no state", deleteCompletedAction(&bbsv1.TaskRowCondition{TaskGuid: "t"}), "delete_completed.state is required"},
		{"retry no guid", retryCallbackAction(&bbsv1.TaskRowCondition{State: taskCompleted}), "retry_callback.task_guid is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.ApplyTaskAction(testContext(t), tt.action)
			requireErrorType(t, err, models.ErrTypeInvalidRequest)
			require.ErrorContains(t, err, tt.field)
		})
	}
}
