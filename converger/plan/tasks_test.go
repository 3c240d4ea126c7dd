package plan

import (
	"testing"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// task is a task fixture in state with created, updated and first-completed times
// the given durations before now (0 leaves a time unset).
func task(guid string, state modelsv1.TaskState, cell string, created, updated, completed time.Duration, callback string) *modelsv1.Task {
	at := func(ago time.Duration) int64 {
		if ago == 0 {
			return 0
		}
		return now.Add(-ago).UnixNano()
	}
	return &modelsv1.Task{
		TaskGuid: guid, Domain: freshDomain, State: state, CellId: cell,
		CreatedAt: at(created), UpdatedAt: at(updated), FirstCompletedAt: at(completed),
		TaskDefinition: &modelsv1.TaskDefinition{CompletionCallbackUrl: callback},
	}
}

func TestPlanTaskRules(t *testing.T) {
	const cb = "https://cc.example/callback"
	tests := []struct {
		name string
		task *modelsv1.Task
		opts Options
		want []string
	}{
		{"pending past the expiry is failed", task("t", taskPending, "", 31*time.Minute, 31*time.Minute, 0, ""), Options{}, []string{"fail-task t"}},
		{"pending within the expiry is kicked", task("t", taskPending, "", 29*time.Minute, 29*time.Minute, 0, ""), Options{}, []string{"kick-task t"}},
		{"fresh pending is kicked every pass", task("t", taskPending, "", time.Second, time.Second, 0, ""), Options{}, []string{"kick-task t"}},
		{"shorter ExpirePending applies", task("t", taskPending, "", 2*time.Minute, time.Minute, 0, ""), Options{ExpirePending: time.Minute}, []string{"fail-task t"}},
		{"running on a vanished cell is failed", task("t", taskRunning, goneCell, time.Hour, time.Hour, 0, ""), Options{}, []string{"fail-task t"}},
		{"running on a live cell is left alone", task("t", taskRunning, liveCell, time.Hour, time.Hour, 0, ""), Options{}, []string{}},
		{"resolving stuck past the kick duration is demoted", task("t", taskResolving, liveCell, time.Hour, 31*time.Second, 40*time.Second, cb), Options{}, []string{"demote-resolving t"}},
		{"recently resolving is left alone", task("t", taskResolving, liveCell, time.Hour, 10*time.Second, 40*time.Second, cb), Options{}, []string{}},
		{"completed past the expiry is deleted", task("t", taskCompleted, liveCell, time.Hour, 31*time.Second, 121*time.Second, cb), Options{}, []string{"delete-completed t"}},
		{"completed with a callback not updated for 30s is retried", task("t", taskCompleted, liveCell, time.Hour, 31*time.Second, 60*time.Second, cb), Options{}, []string{"retry-callback t"}},
		{"completed without a callback waits for deletion", task("t", taskCompleted, liveCell, time.Hour, 31*time.Second, 60*time.Second, ""), Options{}, []string{}},
		{"recently completed is left alone", task("t", taskCompleted, liveCell, time.Hour, 10*time.Second, 10*time.Second, cb), Options{}, []string{}},
		{"paused does not stop task work", task("t", taskCompleted, liveCell, time.Hour, 31*time.Second, 121*time.Second, cb), Options{Paused: true}, []string{"delete-completed t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Plan(snapshot(nil, nil, tt.task), tt.opts)
			assert.Equal(t, tt.want, summary(res))
		})
	}
}

func TestPlanTaskActionDetails(t *testing.T) {
	expired := task("a-expired", taskPending, "", time.Hour, time.Hour, 0, "")
	lost := task("b-lost", taskRunning, goneCell, time.Hour, 5*time.Minute, 0, "")
	done := task("c-done", taskCompleted, liveCell, time.Hour, time.Minute, time.Minute, "https://cb")
	kick := task("d-kick", taskPending, "", time.Second, time.Second, 0, "")
	res := Plan(snapshot(nil, nil, kick, done, lost, expired), Options{})

	require.Len(t, res.FailPending, 1)
	assert.Equal(t, FailureNotStarted, res.FailPending[0].FailureReason)
	assert.Equal(t, taskPending, res.FailPending[0].State)
	assert.Equal(t, expired.UpdatedAt, res.FailPending[0].UpdatedAt)

	require.Len(t, res.FailOnMissingCell, 1)
	assert.Equal(t, FailureCellVanished, res.FailOnMissingCell[0].FailureReason)
	assert.Equal(t, TaskRow{TaskGUID: "b-lost", Domain: freshDomain, CellID: goneCell, State: taskRunning, UpdatedAt: lost.UpdatedAt},
		res.FailOnMissingCell[0].TaskRow)
	assert.Contains(t, res.FailOnMissingCell[0].Why(), goneCell)

	require.Len(t, res.RetryCallbacks, 1)
	assert.Equal(t, "https://cb", res.RetryCallbacks[0].CallbackURL)

	require.Len(t, res.Kicks, 1)
	assert.Equal(t, "d-kick", res.Kicks[0].TaskGUID)
	assert.Equal(t, TaskCounts{Pending: 2, Running: 1, Completed: 1, Kicked: 1}, res.TaskCounts)
	assert.Equal(t, []string{"fail-task a-expired", "kick-task d-kick", "fail-task b-lost", "retry-callback c-done"}, summary(res))
}
