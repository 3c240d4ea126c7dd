package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"drover.dev/bbs/server"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestTaskLifecycle(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")

	t.Run("desire stores a PENDING task and asks for its placement", func(t *testing.T) {
		h.desireTask("t1", "")
		task, err := h.task("t1")
		require.NoError(t, err)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_PENDING, task.GetState())
		h.eventually(func() bool { return len(h.auctioneer.taskGuids()) == 1 }, "task auction")
		require.Equal(t, []string{"t1"}, h.auctioneer.taskGuids())
	})

	t.Run("desire refusals change nothing", func(t *testing.T) {
		cases := []struct {
			name string
			req  *bbsv1.DesireTaskRequest
			code codes.Code
		}{
			{"duplicate", &bbsv1.DesireTaskRequest{TaskGuid: "t1", Domain: testDomain, TaskDefinition: taskDefinition("")}, codes.AlreadyExists},
			{"bad guid", &bbsv1.DesireTaskRequest{TaskGuid: "t 1", Domain: testDomain, TaskDefinition: taskDefinition("")}, codes.InvalidArgument},
			{"no domain", &bbsv1.DesireTaskRequest{TaskGuid: "t2", TaskDefinition: taskDefinition("")}, codes.InvalidArgument},
			{"no definition", &bbsv1.DesireTaskRequest{TaskGuid: "t2", Domain: testDomain}, codes.InvalidArgument},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := h.client.DesireTask(h.ctx(), tc.req)
				requireCode(t, err, tc.code)
			})
		}
		list, err := h.client.ListTasks(h.ctx(), &bbsv1.ListTasksRequest{})
		require.NoError(t, err)
		require.Len(t, list.GetTasks(), 1)
		require.Len(t, h.auctioneer.taskGuids(), 1)
	})

	t.Run("start", func(t *testing.T) {
		resp, err := h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: "t1", CellId: "cell-1"})
		require.NoError(t, err)
		require.True(t, resp.GetShouldStart())
		resp, err = h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: "t1", CellId: "cell-1"})
		require.NoError(t, err)
		require.False(t, resp.GetShouldStart(), "already running on that cell")
		_, err = h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: "t1", CellId: "cell-2"})
		requireCode(t, err, codes.FailedPrecondition)
		_, err = h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: "t1"})
		requireCode(t, err, codes.InvalidArgument)

		list, err := h.client.ListTasks(h.ctx(), &bbsv1.ListTasksRequest{CellId: "cell-1"})
		require.NoError(t, err)
		require.Len(t, list.GetTasks(), 1)
	})

	t.Run("complete, resolving, delete", func(t *testing.T) {
		_, err := h.client.CompleteTask(h.ctx(), &bbsv1.CompleteTaskRequest{TaskGuid: "t1", CellId: "cell-2", Result: "x"})
		requireCode(t, err, codes.FailedPrecondition)
		_, err = h.client.CompleteTask(h.ctx(), &bbsv1.CompleteTaskRequest{TaskGuid: "t1", CellId: "cell-1", Result: "42"})
		require.NoError(t, err)
		task, err := h.task("t1")
		require.NoError(t, err)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_COMPLETED, task.GetState())
		require.Equal(t, "42", task.GetResult())

		_, err = h.client.DeleteTask(h.ctx(), &bbsv1.DeleteTaskRequest{TaskGuid: "t1"})
		requireCode(t, err, codes.FailedPrecondition)
		_, err = h.client.ResolvingTask(h.ctx(), &bbsv1.ResolvingTaskRequest{TaskGuid: "t1"})
		require.NoError(t, err)
		_, err = h.client.DeleteTask(h.ctx(), &bbsv1.DeleteTaskRequest{TaskGuid: "t1"})
		require.NoError(t, err)
		_, err = h.task("t1")
		requireCode(t, err, codes.NotFound)
	})

	t.Run("cancel of a RUNNING task cancels it on its cell", func(t *testing.T) {
		h.desireTask("t2", "")
		_, err := h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: "t2", CellId: "cell-1"})
		require.NoError(t, err)
		_, err = h.client.CancelTask(h.ctx(), &bbsv1.CancelTaskRequest{TaskGuid: "t2"})
		require.NoError(t, err)
		task, err := h.task("t2")
		require.NoError(t, err)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_COMPLETED, task.GetState())
		require.True(t, task.GetFailed())
		require.Equal(t, "task was cancelled", task.GetFailureReason())
		h.eventually(func() bool { return len(h.rep.cancelled()) == 1 }, "rep asked to cancel")
		require.Equal(t, []string{"t2"}, h.rep.cancelled())

		_, err = h.client.CancelTask(h.ctx(), &bbsv1.CancelTaskRequest{TaskGuid: "t2"})
		requireCode(t, err, codes.FailedPrecondition)
	})

	t.Run("cancel of a PENDING task asks no rep", func(t *testing.T) {
		h.desireTask("t3", "")
		_, err := h.client.CancelTask(h.ctx(), &bbsv1.CancelTaskRequest{TaskGuid: "t3"})
		require.NoError(t, err)
		h.server.Wait()
		require.Equal(t, []string{"t2"}, h.rep.cancelled())
	})

	t.Run("fail", func(t *testing.T) {
		h.desireTask("t4", "")
		_, err := h.client.FailTask(h.ctx(), &bbsv1.FailTaskRequest{TaskGuid: "t4", FailureReason: "no"})
		require.NoError(t, err)
		task, err := h.task("t4")
		require.NoError(t, err)
		require.True(t, task.GetFailed())
		require.Equal(t, "no", task.GetFailureReason())
	})

	t.Run("reject goes back to PENDING and is auctioned again, until too many", func(t *testing.T) {
		h.desireTask("t5", "")
		for i := range server.DefaultMaxTaskRetries {
			_, err := h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: "t5", CellId: "cell-1"})
			require.NoError(t, err)
			_, err = h.client.RejectTask(h.ctx(), &bbsv1.RejectTaskRequest{TaskGuid: "t5", RejectionReason: "full"})
			require.NoError(t, err)
			task, err := h.task("t5")
			require.NoError(t, err)
			require.Equal(t, modelsv1.TaskState_TASK_STATE_PENDING, task.GetState(), "reject %d", i+1)
			require.Equal(t, int32(i+1), task.GetRejectionCount())
		}
		h.eventually(func() bool { return count(h.auctioneer.taskGuids(), "t5") == 1+server.DefaultMaxTaskRetries }, "auctioned after each reject")

		_, err := h.client.RejectTask(h.ctx(), &bbsv1.RejectTaskRequest{TaskGuid: "t5", RejectionReason: "full"})
		require.NoError(t, err)
		task, err := h.task("t5")
		require.NoError(t, err)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_COMPLETED, task.GetState())
		require.True(t, task.GetFailed())
	})
}

func count(values []string, v string) int {
	n := 0
	for _, x := range values {
		if x == v {
			n++
		}
	}
	return n
}

// callbackReceiver is an httptest server that records task callbacks and answers
// with the given status (0: hang until the client gives up).
type callbackReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	received []server.TaskCallbackResponse
	status   int
}

func newCallbackReceiver(t *testing.T, status int) *callbackReceiver {
	r := &callbackReceiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body server.TaskCallbackResponse
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.received = append(r.received, body)
		r.mu.Unlock()
		if r.status == 0 {
			<-req.Context().Done()
			return
		}
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *callbackReceiver) calls() []server.TaskCallbackResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]server.TaskCallbackResponse(nil), r.received...)
}

func TestTaskCompletionCallback(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{httpClient: &http.Client{Timeout: 300 * time.Millisecond}})
	accepted := newCallbackReceiver(t, http.StatusOK)
	unavailable := newCallbackReceiver(t, http.StatusServiceUnavailable)
	hanging := newCallbackReceiver(t, 0)

	complete := func(guid, url string) {
		t.Helper()
		h.desireTask(guid, url)
		_, err := h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: guid, CellId: "cell-1"})
		require.NoError(t, err)
		_, err = h.client.CompleteTask(h.ctx(), &bbsv1.CompleteTaskRequest{
			TaskGuid: guid, CellId: "cell-1", Failed: true, FailureReason: "boom", Result: "out",
		})
		require.NoError(t, err)
	}

	t.Run("an accepted callback deletes the task", func(t *testing.T) {
		complete("accepted", accepted.URL)
		h.eventually(func() bool {
			_, err := h.task("accepted")
			return err != nil
		}, "task deleted after the callback")
		_, err := h.task("accepted")
		requireCode(t, err, codes.NotFound)
		calls := accepted.calls()
		require.Len(t, calls, 1)
		require.Equal(t, "accepted", calls[0].TaskGuid)
		require.True(t, calls[0].Failed)
		require.Equal(t, "boom", calls[0].FailureReason)
		require.Equal(t, "out", calls[0].Result)
		require.Equal(t, "task annotation", calls[0].Annotation)
		require.NotZero(t, calls[0].CreatedAt)
	})

	t.Run("503 leaves the task RESOLVING without retrying", func(t *testing.T) {
		complete("unavailable", unavailable.URL)
		h.server.Wait()
		task, err := h.task("unavailable")
		require.NoError(t, err)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_RESOLVING, task.GetState())
		require.Len(t, unavailable.calls(), 1)
	})

	t.Run("timeouts are retried three times, then the task stays RESOLVING", func(t *testing.T) {
		complete("hanging", hanging.URL)
		h.server.Wait()
		task, err := h.task("hanging")
		require.NoError(t, err)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_RESOLVING, task.GetState())
		require.Len(t, hanging.calls(), 3)
	})

	t.Run("cancel runs the callback too", func(t *testing.T) {
		h.desireTask("cancelled", accepted.URL)
		_, err := h.client.CancelTask(h.ctx(), &bbsv1.CancelTaskRequest{TaskGuid: "cancelled"})
		require.NoError(t, err)
		h.eventually(func() bool {
			_, err := h.task("cancelled")
			return err != nil
		}, "cancelled task deleted after the callback")
		calls := accepted.calls()
		require.Equal(t, "task was cancelled", calls[len(calls)-1].FailureReason)
	})
}
