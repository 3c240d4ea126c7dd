package httpapi

import (
	"net/http"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// desireTask handles POST /v1/tasks with {task_guid, domain, task_definition}.
func (a *api) desireTask(w http.ResponseWriter, r *http.Request) error {
	body, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := jsonapi.DecodeDesireTask(body)
	if err != nil {
		return err
	}
	if _, err := a.bbs.DesireTask(r.Context(), req); err != nil {
		return err
	}
	a.writeJSON(w, http.StatusCreated, emptyObject)
	return nil
}

// listTasks handles GET /v1/tasks[?domain=&cell_id=].
func (a *api) listTasks(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	resp, err := a.bbs.ListTasks(r.Context(), &bbsv1.ListTasksRequest{Domain: q.Get("domain"), CellId: q.Get("cell_id")})
	if err != nil {
		return err
	}
	views := make([]jsonapi.Task, 0, len(resp.GetTasks()))
	for _, task := range resp.GetTasks() {
		view, err := jsonapi.TaskView(models.TaskWithoutImageCredentials(task))
		if err != nil {
			return err
		}
		views = append(views, view)
	}
	a.writeJSON(w, http.StatusOK, views)
	return nil
}

// getTask handles GET /v1/tasks/{task_guid}.
func (a *api) getTask(w http.ResponseWriter, r *http.Request) error {
	task, err := a.fetchTask(r)
	if err != nil {
		return err
	}
	return a.writeTask(w, task)
}

// cancelTask handles POST /v1/tasks/{task_guid}/cancel.
func (a *api) cancelTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.bbs.CancelTask(r.Context(), &bbsv1.CancelTaskRequest{TaskGuid: r.PathValue("task_guid")}); err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, emptyObject)
	return nil
}

// deleteTask handles DELETE /v1/tasks/{task_guid} the way a client that takes the
// result does: it claims the completed task (RESOLVING), deletes it and answers with
// the task as it was fetched, result included. A task left RESOLVING by an earlier
// attempt is deleted directly.
func (a *api) deleteTask(w http.ResponseWriter, r *http.Request) error {
	task, err := a.fetchTask(r)
	if err != nil {
		return err
	}
	guid := task.GetTaskGuid()
	if task.GetState() != modelsv1.TaskState_TASK_STATE_RESOLVING {
		if _, err := a.bbs.ResolvingTask(r.Context(), &bbsv1.ResolvingTaskRequest{TaskGuid: guid}); err != nil {
			return err
		}
	}
	if _, err := a.bbs.DeleteTask(r.Context(), &bbsv1.DeleteTaskRequest{TaskGuid: guid}); err != nil {
		return err
	}
	return a.writeTask(w, task)
}

// fetchTask gets the task named by the {task_guid} path segment.
func (a *api) fetchTask(r *http.Request) (*modelsv1.Task, error) {
	resp, err := a.bbs.GetTask(r.Context(), &bbsv1.GetTaskRequest{TaskGuid: r.PathValue("task_guid")})
	if err != nil {
		return nil, err
	}
	return resp.GetTask(), nil
}

// writeTask answers with the task's view.
func (a *api) writeTask(w http.ResponseWriter, task *modelsv1.Task) error {
	// The HTTP API is for people and bridges: image credentials are only for cells.
	view, err := jsonapi.TaskView(models.TaskWithoutImageCredentials(task))
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, view)
	return nil
}
