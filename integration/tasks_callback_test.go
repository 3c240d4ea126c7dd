package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	bbsconfig "drover.dev/bbs/config"
	convergerconfig "drover.dev/converger/config"
	"drover.dev/devstack/devstacktest"
	libconfig "drover.dev/lib/config"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Timing of the task callback scenarios.
const (
	// taskCallbackTimeout bounds each callback POST of the test BBS (task_callback_timeout).
	taskCallbackTimeout = time.Second
	// taskKickDuration is the converger's kick_task_duration: a RESOLVING task whose
	// callback failed is demoted this long after the attempt, and its callback retried
	// about as long after that.
	taskKickDuration = 3 * time.Second
	// hangLimit ends a hanging callback answer should the BBS never give up on it.
	hangLimit = 15 * time.Second
)

// newTaskCallbackStack starts one cell and a converger with a short kick duration
// (passes every devstacktest.ConvergeInterval), the BBS posting callbacks with a
// taskCallbackTimeout limit.
func newTaskCallbackStack(t *testing.T) *cellStack {
	t.Helper()
	s := devstacktest.New(t, devstacktest.Options{
		Cells: 1,
		Configure: func(_ int, c *bbsconfig.Config) {
			c.TaskCallbackTimeout = libconfig.Duration(taskCallbackTimeout)
		},
		ConfigureConverger: func(c *convergerconfig.Config) {
			c.RepeatInterval = libconfig.Duration(devstacktest.ConvergeInterval)
			c.KickTaskDuration = libconfig.Duration(taskKickDuration)
		},
	})
	return &cellStack{Stack: s, bbs: devstacktest.Client(t, s, 0)}
}

// TestTasksCallback: a completed task's result reaches its completion_callback_url once
// and the task is deleted; a callback that times out is posted again at once; a 503 leaves
// the task RESOLVING until convergence demotes it and the callback is retried; a
// cancelled task calls back failed with the cancel reason.
func TestTasksCallback(t *testing.T) {
	cs := newTaskCallbackStack(t)
	bbsLog := &cs.BBS[0].Service

	t.Run("result reaches the callback", func(t *testing.T) {
		const guid = "cb-result"
		cr := newCallbackReceiver(t, answerOK)
		cs.desireTask(t, guid, &modelsv1.TaskDefinition{
			Action:                shAction(`printf 'the result of cb-result' > /tmp/result`),
			ResultFile:            "/tmp/result",
			CompletionCallbackUrl: cr.URL(),
			Annotation:            "annotation of cb-result",
		})
		got := cr.waitAttempts(t, 1, runningWait)[0].Body
		cs.waitTaskDeleted(t, guid, settleWait)
		require.Len(t, cr.Attempts(), 1, "an accepted callback is posted once")
		require.Equal(t, guid, got.TaskGuid)
		require.False(t, got.Failed, got.FailureReason)
		require.Empty(t, got.FailureReason)
		require.Equal(t, "the result of cb-result", got.Result)
		require.Equal(t, "annotation of cb-result", got.Annotation)
		require.Positive(t, got.CreatedAt)
		require.Eventually(t, func() bool { return loggedFor(bbsLog, "task-callback-succeeded", guid) }, settleWait, cellPoll)
	})

	t.Run("a timed-out callback is retried", func(t *testing.T) {
		const guid = "cb-timeout"
		cr := newCallbackReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				select { // outlast the BBS's callback timeout
				case <-r.Context().Done():
				case <-time.After(hangLimit):
				}
			}
			w.WriteHeader(http.StatusOK)
		})
		cs.desireTask(t, guid, &modelsv1.TaskDefinition{
			Action:                shAction(`printf timeout > /tmp/result`),
			ResultFile:            "/tmp/result",
			CompletionCallbackUrl: cr.URL(),
		})
		got := cr.waitAttempts(t, 2, runningWait)
		cs.waitTaskDeleted(t, guid, settleWait)
		t.Logf("second attempt %s after the first (callback timeout %s)", got[1].At.Sub(got[0].At), taskCallbackTimeout)
		for i, a := range got {
			require.Equal(t, guid, a.Body.TaskGuid, "attempt %d", i+1)
			require.Equal(t, "timeout", a.Body.Result, "attempt %d", i+1)
		}
		require.True(t, loggedFor(bbsLog, "retrying-task-callback", guid), "the BBS did not log its retry")
		require.Eventually(t, func() bool { return loggedFor(bbsLog, "task-callback-succeeded", guid) }, settleWait, cellPoll)
	})

	t.Run("a 503 is retried later", func(t *testing.T) {
		const guid = "cb-503"
		cr := newCallbackReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		cs.desireTask(t, guid, &modelsv1.TaskDefinition{
			Action:                shAction(`printf unavailable > /tmp/result`),
			ResultFile:            "/tmp/result",
			CompletionCallbackUrl: cr.URL(),
		})
		cr.waitAttempts(t, 1, runningWait)
		require.Eventually(t, func() bool { return loggedFor(bbsLog, "task-callback-failed", guid) }, settleWait, cellPoll,
			"the BBS did not log the refused callback")
		resp, err := cs.bbs.GetTask(callCtx(t), &bbsv1.GetTaskRequest{TaskGuid: guid})
		require.NoError(t, err, "a task whose callback got a 503 must stay")
		require.Equal(t, modelsv1.TaskState_TASK_STATE_RESOLVING, resp.GetTask().GetState())
		require.Len(t, cr.Attempts(), 1, "a 503 is not retried at once")

		got := cr.waitAttempts(t, 2, settleWait)
		cs.waitTaskDeleted(t, guid, settleWait)
		gap := got[1].At.Sub(got[0].At)
		t.Logf("second attempt %s after the first (kick duration %s)", gap, taskKickDuration)
		require.GreaterOrEqual(t, gap, taskKickDuration/2, "the retry came before convergence could demote the task")
		require.Equal(t, "unavailable", got[1].Body.Result)
		require.Eventually(t, func() bool { return loggedFor(bbsLog, "task-callback-succeeded", guid) }, settleWait, cellPoll)
	})

	t.Run("cancel calls back", func(t *testing.T) {
		const guid = "cb-cancel"
		marker := "DROVER_TEST_TASK=" + guid
		cr := newCallbackReceiver(t, answerOK)
		cs.desireTask(t, guid, &modelsv1.TaskDefinition{
			Action:                shAction("exec sleep 1000"),
			Env:                   []*modelsv1.EnvironmentVariable{{Name: "DROVER_TEST_TASK", Value: guid}},
			CompletionCallbackUrl: cr.URL(),
			Annotation:            "cancel me",
		})
		cs.waitTask(t, guid, "running", func(task *modelsv1.Task) bool {
			return task.GetState() == modelsv1.TaskState_TASK_STATE_RUNNING
		})
		require.Eventually(t, func() bool { return len(envPids(marker, "sleep")) > 0 }, settleWait, cellPoll,
			"the task's process never showed")
		require.Empty(t, cr.Attempts(), "a running task called back")
		_, err := cs.bbs.CancelTask(callCtx(t), &bbsv1.CancelTaskRequest{TaskGuid: guid})
		require.NoError(t, err)
		got := cr.waitAttempts(t, 1, settleWait)[0].Body
		require.Equal(t, guid, got.TaskGuid)
		require.True(t, got.Failed)
		require.Equal(t, "task was cancelled", got.FailureReason)
		require.Equal(t, "cancel me", got.Annotation)
		cs.waitTaskDeleted(t, guid, settleWait)
		require.Len(t, cr.Attempts(), 1)
		require.Eventually(t, func() bool { return len(envPids(marker, "")) == 0 }, settleWait, cellPoll,
			"the cancelled task's processes still run")
	})

	cs.requireHostClean(t)
}

// TestTasksLogsStream: `droverctl logs TASK_GUID --follow` streams a task's lines
// through its cell's rep, in order, while the task still runs.
func TestTasksLogsStream(t *testing.T) {
	const (
		guid  = "logs-task"
		lines = 10
	)
	cs := newCellStack(t, 1, nil)
	cs.desireTask(t, guid, &modelsv1.TaskDefinition{
		Action: shAction(`sleep 2; for i in $(seq 1 ` + strconv.Itoa(lines) + `); do echo "line-$i"; sleep 0.25; done`),
	})
	cs.waitTask(t, guid, "running", func(task *modelsv1.Task) bool {
		return task.GetState() == modelsv1.TaskState_TASK_STATE_RUNNING
	})

	ctx, cancel := context.WithTimeout(t.Context(), runningWait)
	defer cancel()
	cmd := droverctlCommand(t, ctx, cs.Stack, "--json", "logs", guid, "--follow")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := false
	t.Cleanup(func() {
		if !waited {
			cancel()
			_ = cmd.Wait()
		}
	})

	var got []receivedLine
	sc := bufio.NewScanner(stdout)
	for len(got) < lines && sc.Scan() {
		var l receivedLine
		l.received = time.Now()
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l.logLineJSON), "droverctl line %q", sc.Text())
		if !strings.HasPrefix(l.Text, "line-") {
			continue // the cell's own lines
		}
		l.written, err = time.Parse(time.RFC3339Nano, l.Time)
		require.NoError(t, err, "time of %q", sc.Text())
		got = append(got, l)
	}
	cancel() // Ctrl-C: the normal end of --follow
	err = cmd.Wait()
	waited = true
	require.Len(t, got, lines, "droverctl ended early (%v): %s", err, stderr.String())
	// Interrupted, Wait reports the context's error; droverctl itself must exit 0.
	require.Equal(t, 0, cmd.ProcessState.ExitCode(), "droverctl: %v: %s", err, stderr.String())

	for i, l := range got {
		require.Equal(t, "line-"+strconv.Itoa(i+1), l.Text, "line %d out of order", i+1)
		require.Equal(t, guid, l.ContainerGuid)
		require.Equal(t, "stdout", l.Stream)
		if i > 0 {
			require.False(t, l.written.Before(got[i-1].written), "timestamps of lines %d and %d go backwards", i, i+1)
		}
	}
	first, last := got[0], got[len(got)-1]
	t.Logf("first line read %s after it was written; the last was written %s after the first was read",
		first.received.Sub(first.written), last.written.Sub(first.received))
	require.True(t, first.received.Before(last.written),
		"the first line arrived only after the task wrote its last one: not streamed while the task ran")

	task := cs.waitTaskCompleted(t, guid)
	require.False(t, task.GetFailed(), task.GetFailureReason())
	cs.requireHostClean(t)
}
