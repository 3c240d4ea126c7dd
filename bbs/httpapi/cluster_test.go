package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/httpapi"
	"drover.dev/bbs/jsonapi"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestUpsertDomainCacheControl(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, nil)
	tests := []struct {
		name    string
		headers []string
		ttl     uint32
		invalid bool
	}{
		{"absent is forever", nil, 0, false},
		{"max-age", []string{"Cache-Control: max-age=30"}, 30, false},
		{"max-age among directives", []string{"Cache-Control: public, MAX-AGE=120 , must-revalidate"}, 120, false},
		{"quoted max-age", []string{`Cache-Control: max-age="5"`}, 5, false},
		{"split over headers", []string{"Cache-Control: public", "Cache-Control: max-age=7"}, 7, false},
		{"max-age=0 is forever", []string{"Cache-Control: max-age=0"}, 0, false},
		{"largest", []string{"Cache-Control: max-age=4294967295"}, 4294967295, false},
		{"not a number", []string{"Cache-Control: max-age=soon"}, 0, true},
		{"negative", []string{"Cache-Control: max-age=-1"}, 0, true},
		{"fraction", []string{"Cache-Control: max-age=1.5"}, 0, true},
		{"overflow", []string{"Cache-Control: max-age=4294967296"}, 0, true},
		{"no value", []string{"Cache-Control: max-age"}, 0, true},
		{"no max-age", []string{"Cache-Control: no-cache"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.domains.all())
			resp := h.do(t, http.MethodPut, "/v1/domains/cf-apps", "", tt.headers...)
			if tt.invalid {
				requireError(t, resp, http.StatusBadRequest, "InvalidRequest")
				require.Len(t, h.domains.all(), before, "nothing reaches the BBS")
				return
			}
			require.Equal(t, http.StatusOK, resp.status, resp.body)
			req := lastCall[*bbsv1.UpsertDomainRequest](t, &h.domains.calls)
			require.Equal(t, "cf-apps", req.GetDomain())
			require.Equal(t, tt.ttl, req.GetTtlSeconds())
		})
	}
}

func TestListDomainsAndCells(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, func(f *fakes) {
		f.domains.domains = []string{"cf-apps", "cf-tasks"}
		f.cells.cells = []*modelsv1.CellPresence{{
			CellId: "cell-1", RepAddress: "10.0.0.1:1800", Zone: "z1",
			Capacity:        &modelsv1.CellCapacity{MemoryMb: 4096, DiskMb: 8192, Containers: 250},
			RootfsProviders: []*modelsv1.RootFSProvider{{Name: "preloaded", Properties: []string{"cflinuxfs4"}}},
			PlacementTags:   []string{"gpu"},
			ExpiresAt:       42,
		}}
	})

	resp := h.do(t, http.MethodGet, "/v1/domains", "")
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	require.JSONEq(t, `["cf-apps", "cf-tasks"]`, resp.body)

	resp = h.do(t, http.MethodGet, "/v1/cells", "")
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	require.JSONEq(t, `[{"cell_id": "cell-1", "rep_address": "10.0.0.1:1800", "zone": "z1",
		"capacity": {"memory_mb": 4096, "disk_mb": 8192, "containers": 250},
		"rootfs_providers": [{"name": "preloaded", "properties": ["cflinuxfs4"]}],
		"placement_tags": ["gpu"], "expires_at": 42}]`, resp.body)
}

func TestEmptyListsAreArrays(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, nil)
	for _, path := range []string{"/v1/domains", "/v1/cells", "/v1/tasks", "/v1/desired_lrps", "/v1/actual_lrps"} {
		t.Run(path, func(t *testing.T) {
			resp := h.do(t, http.MethodGet, path, "")
			require.Equal(t, http.StatusOK, resp.status, resp.body)
			require.JSONEq(t, `[]`, resp.body)
		})
	}
}

func TestTasks(t *testing.T) {
	completed := &modelsv1.Task{
		TaskGuid: "done", Domain: "jobs", State: modelsv1.TaskState_TASK_STATE_COMPLETED, CellId: "cell-1",
		Result: "42", CreatedAt: 10, UpdatedAt: 20, FirstCompletedAt: 20,
		TaskDefinition: &modelsv1.TaskDefinition{Rootfs: "preloaded:cflinuxfs4", MemoryMb: 64},
	}
	running := &modelsv1.Task{TaskGuid: "busy", Domain: "jobs", State: modelsv1.TaskState_TASK_STATE_RUNNING}
	resolving := &modelsv1.Task{TaskGuid: "half-deleted", Domain: "jobs", State: modelsv1.TaskState_TASK_STATE_RESOLVING}
	h := newHarness(t, httpapi.Options{}, func(f *fakes) {
		f.tasks.tasks = []*modelsv1.Task{completed, running, resolving}
	})

	t.Run("desire", func(t *testing.T) {
		resp := h.do(t, http.MethodPost, "/v1/tasks", `{"task_guid": "new", "domain": "jobs",
			"task_definition": {"rootfs": "preloaded:cflinuxfs4", "action": {"run": {"path": "/bin/true", "user": "root"}}}}`)
		require.Equal(t, http.StatusCreated, resp.status, resp.body)
		req := lastCall[*bbsv1.DesireTaskRequest](t, &h.tasks.calls)
		require.Equal(t, "new", req.GetTaskGuid())
		require.Equal(t, "/bin/true", req.GetTaskDefinition().GetAction().GetRun().GetPath())
		requireError(t, h.do(t, http.MethodPost, "/v1/tasks", `{"task_guid": "x", "definition": {}}`), http.StatusBadRequest, "InvalidJSON")
	})

	t.Run("get", func(t *testing.T) {
		resp := h.do(t, http.MethodGet, "/v1/tasks/done", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		require.JSONEq(t, `{"task_guid": "done", "domain": "jobs", "state": "COMPLETED", "cell_id": "cell-1",
			"result": "42", "failed": false, "created_at": 10, "updated_at": 20, "first_completed_at": 20,
			"task_definition": {"rootfs": "preloaded:cflinuxfs4", "memory_mb": 64}}`, resp.body)
		requireError(t, h.do(t, http.MethodGet, "/v1/tasks/nope", ""), http.StatusNotFound, "ResourceNotFound")
	})

	t.Run("list passes filters", func(t *testing.T) {
		resp := h.do(t, http.MethodGet, "/v1/tasks?domain=jobs&cell_id=cell-1", "")
		require.Equal(t, http.StatusOK, resp.status, resp.body)
		var tasks []jsonapi.Task
		require.NoError(t, json.Unmarshal([]byte(resp.body), &tasks))
		require.Len(t, tasks, 3)
		require.Equal(t, "RUNNING", tasks[1].State)
		req := lastCall[*bbsv1.ListTasksRequest](t, &h.tasks.calls)
		require.Equal(t, "jobs", req.GetDomain())
		require.Equal(t, "cell-1", req.GetCellId())
	})

	t.Run("cancel", func(t *testing.T) {
		require.Equal(t, http.StatusOK, h.do(t, http.MethodPost, "/v1/tasks/busy/cancel", "").status)
		require.Equal(t, "busy", lastCall[*bbsv1.CancelTaskRequest](t, &h.tasks.calls).GetTaskGuid())
		requireError(t, h.do(t, http.MethodPost, "/v1/tasks/err-InvalidStateTransition/cancel", ""), http.StatusConflict, "InvalidStateTransition")
	})

	deleteTests := []struct {
		guid   string
		status int
		calls  []string // gRPC calls the DELETE makes, in order
	}{
		{"done", http.StatusOK, []string{"GetTask", "ResolvingTask", "DeleteTask"}},
		{"half-deleted", http.StatusOK, []string{"GetTask", "DeleteTask"}},
		{"busy", http.StatusConflict, []string{"GetTask", "ResolvingTask"}},
		{"nope", http.StatusNotFound, []string{"GetTask"}},
	}
	for _, tt := range deleteTests {
		t.Run("delete "+tt.guid, func(t *testing.T) {
			before := len(h.tasks.all())
			resp := h.do(t, http.MethodDelete, "/v1/tasks/"+tt.guid, "")
			require.Equal(t, tt.status, resp.status, resp.body)
			require.Equal(t, tt.calls, callNames(h.tasks.all()[before:]))
			if tt.status == http.StatusOK {
				var task jsonapi.Task
				require.NoError(t, json.Unmarshal([]byte(resp.body), &task))
				require.Equal(t, tt.guid, task.TaskGUID)
			}
		})
	}
	t.Run("delete answers with the result", func(t *testing.T) {
		// "done" was deleted above against the fake, which still holds it.
		resp := h.do(t, http.MethodDelete, "/v1/tasks/done", "")
		var task jsonapi.Task
		require.NoError(t, json.Unmarshal([]byte(resp.body), &task))
		require.Equal(t, "42", task.Result)
	})
}

// callNames names recorded task requests by the RPC they belong to.
func callNames(reqs []any) []string {
	names := []string{}
	for _, req := range reqs {
		switch req.(type) {
		case *bbsv1.GetTaskRequest:
			names = append(names, "GetTask")
		case *bbsv1.ResolvingTaskRequest:
			names = append(names, "ResolvingTask")
		case *bbsv1.DeleteTaskRequest:
			names = append(names, "DeleteTask")
		default:
			names = append(names, "other")
		}
	}
	return names
}
