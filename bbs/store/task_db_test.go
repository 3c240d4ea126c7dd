package store_test

import (
	"strings"
	"testing"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

const (
	taskPending   = modelsv1.TaskState_TASK_STATE_PENDING
	taskRunning   = modelsv1.TaskState_TASK_STATE_RUNNING
	taskCompleted = modelsv1.TaskState_TASK_STATE_COMPLETED
	taskResolving = modelsv1.TaskState_TASK_STATE_RESOLVING
)

func newTaskDefinition() *modelsv1.TaskDefinition {
	return &modelsv1.TaskDefinition{
		Rootfs:   "preloaded:cflinuxfs4",
		MemoryMb: 128,
		DiskMb:   256,
		Env:      []*modelsv1.EnvironmentVariable{{Name: "TOKEN", Value: secretEnvValue}},
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
			Path: "/bin/migrate", User: "vcap",
		}}},
		ResultFile:            "/tmp/result",
		CompletionCallbackUrl: "https://cc.example.com/tasks/done",
	}
}

func TestDesireAndReadTasks(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)

	task, err := s.DesireTask(ctx, "t-1", "cf-tasks", newTaskDefinition())
	require.NoError(t, err)
	require.Equal(t, taskPending, task.State)
	require.Equal(t, clock.Now().UnixNano(), task.CreatedAt)
	require.Equal(t, task.CreatedAt, task.UpdatedAt)
	require.Equal(t, []string{models.EventTypeTaskCreated}, eventTypes(t, s, 0))
	got, err := s.GetTask(ctx, "t-1")
	require.NoError(t, err)
	requireProtoEqual(t, task, got)

	_, err = s.DesireTask(ctx, "t-1", "cf-tasks", newTaskDefinition())
	requireErrorType(t, err, models.ErrTypeResourceExists)
	_, err = s.DesireTask(ctx, "t-nil", "cf-tasks", nil)
	requireErrorType(t, err, models.ErrTypeInvalidRequest)
	_, err = s.GetTask(ctx, "missing")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)

	_, err = s.DesireTask(ctx, "t-2", "cf-tasks", newTaskDefinition())
	require.NoError(t, err)
	_, err = s.DesireTask(ctx, "t-3", "other", newTaskDefinition())
	require.NoError(t, err)
	_, _, err = s.StartTask(ctx, "t-2", "cell-a")
	require.NoError(t, err)

	tests := []struct {
		name   string
		filter store.TaskFilter
		want   []string
	}{
		{"all", store.TaskFilter{}, []string{"t-1", "t-2", "t-3"}},
		{"domain", store.TaskFilter{Domain: "cf-tasks"}, []string{"t-1", "t-2"}},
		{"cell", store.TaskFilter{CellID: "cell-a"}, []string{"t-2"}},
		{"both", store.TaskFilter{Domain: "other", CellID: "cell-a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks, err := s.ListTasks(ctx, tt.filter)
			require.NoError(t, err)
			var guids []string
			for _, task := range tasks {
				guids = append(guids, task.TaskGuid)
			}
			require.Equal(t, tt.want, guids)
		})
	}
}

func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	_, err := s.DesireTask(ctx, "t", "d", newTaskDefinition())
	require.NoError(t, err)

	clock.Advance(time.Second)
	change, shouldStart, err := s.StartTask(ctx, "t", "cell-a")
	require.NoError(t, err)
	require.True(t, shouldStart)
	require.Equal(t, taskRunning, change.After.State)
	require.Equal(t, "cell-a", change.After.CellId)
	require.Equal(t, clock.Now().UnixNano(), change.After.UpdatedAt)

	seq := latest(t, s)
	_, shouldStart, err = s.StartTask(ctx, "t", "cell-a")
	require.NoError(t, err)
	require.False(t, shouldStart, "already running on that cell")
	require.Empty(t, eventTypes(t, s, seq))
	_, _, err = s.StartTask(ctx, "t", "cell-b")
	requireErrorType(t, err, models.ErrTypeRunningOnDifferentCell)

	_, err = s.CompleteTask(ctx, "t", "cell-b", false, "", "nope")
	requireErrorType(t, err, models.ErrTypeRunningOnDifferentCell)
	clock.Advance(time.Second)
	change, err = s.CompleteTask(ctx, "t", "cell-a", false, "", "42")
	require.NoError(t, err)
	require.Equal(t, taskCompleted, change.After.State)
	require.Equal(t, "42", change.After.Result)
	require.False(t, change.After.Failed)
	require.Equal(t, clock.Now().UnixNano(), change.After.FirstCompletedAt)
	require.Equal(t, "cell-a", change.Before.CellId)
	_, err = s.CompleteTask(ctx, "t", "cell-a", false, "", "again")
	requireErrorType(t, err, models.ErrTypeInvalidStateTransition)

	_, err = s.DeleteTask(ctx, "t")
	requireErrorType(t, err, models.ErrTypeInvalidStateTransition)
	change, err = s.ResolvingTask(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, taskResolving, change.After.State)
	_, err = s.ResolvingTask(ctx, "t")
	requireErrorType(t, err, models.ErrTypeInvalidStateTransition)

	seq = latest(t, s)
	deleted, err := s.DeleteTask(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, "42", deleted.Result)
	require.Equal(t, []string{models.EventTypeTaskRemoved}, eventTypes(t, s, seq))
	_, err = s.GetTask(ctx, "t")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)

	require.Equal(t, []string{models.EventTypeTaskCreated, models.EventTypeTaskChanged,
		models.EventTypeTaskChanged, models.EventTypeTaskChanged, models.EventTypeTaskRemoved}, eventTypes(t, s, 0))
}

func TestCancelAndFailTask(t *testing.T) {
	t.Parallel()
	s, _ := newStoreWithClock(t)
	ctx := testContext(t)
	tests := []struct {
		name       string
		startFirst bool
		act        func(guid string) (*store.TaskChange, error)
		wantReason string
	}{
		{"cancel pending", false, func(g string) (*store.TaskChange, error) { return s.CancelTask(ctx, g) }, store.CancelledReason},
		{"cancel running", true, func(g string) (*store.TaskChange, error) { return s.CancelTask(ctx, g) }, store.CancelledReason},
		{"fail pending", false, func(g string) (*store.TaskChange, error) { return s.FailTask(ctx, g, "bad") }, "bad"},
		{"fail running", true, func(g string) (*store.TaskChange, error) {
			return s.FailTask(ctx, g, strings.Repeat("r", 3000))
		}, strings.Repeat("r", models.MaxReasonLength)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			guid := "task-" + string(rune('a'+i))
			_, err := s.DesireTask(ctx, guid, "d", newTaskDefinition())
			require.NoError(t, err)
			if tt.startFirst {
				_, _, err = s.StartTask(ctx, guid, "cell-a")
				require.NoError(t, err)
			}
			change, err := tt.act(guid)
			require.NoError(t, err)
			require.Equal(t, taskCompleted, change.After.State)
			require.True(t, change.After.Failed)
			require.Equal(t, tt.wantReason, change.After.FailureReason)
			require.NotZero(t, change.After.FirstCompletedAt)
			if tt.startFirst {
				require.Equal(t, "cell-a", change.Before.CellId, "Before names the cell to cancel on")
			}
			_, err = tt.act(guid)
			requireErrorType(t, err, models.ErrTypeInvalidStateTransition)
		})
	}
	_, err := s.CancelTask(ctx, "missing")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
}

func TestRejectTask(t *testing.T) {
	t.Parallel()
	s, _ := newStoreWithClock(t)
	ctx := testContext(t)
	const maxRetries = 2
	_, err := s.DesireTask(ctx, "t", "d", newTaskDefinition())
	require.NoError(t, err)

	for i := range maxRetries {
		_, _, err := s.StartTask(ctx, "t", "cell-a")
		require.NoError(t, err)
		change, err := s.RejectTask(ctx, "t", "no room", maxRetries)
		require.NoError(t, err)
		require.Equal(t, taskPending, change.After.State, "reject %d", i+1)
		require.Empty(t, change.After.CellId)
		require.Equal(t, int32(i+1), change.After.RejectionCount)
		require.Equal(t, "no room", change.After.RejectionReason)
	}
	// The count before this reject has reached maxRetries: the task fails.
	change, err := s.RejectTask(ctx, "t", strings.Repeat("z", 2000), maxRetries)
	require.NoError(t, err)
	require.Equal(t, taskCompleted, change.After.State)
	require.True(t, change.After.Failed)
	require.Len(t, change.After.FailureReason, models.MaxReasonLength)
	require.Len(t, change.After.RejectionReason, models.MaxReasonLength)
	require.Equal(t, int32(maxRetries+1), change.After.RejectionCount)

	_, err = s.RejectTask(ctx, "t", "late", maxRetries)
	requireErrorType(t, err, models.ErrTypeInvalidStateTransition)
}
