package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/store"
)

// TestMalformedDockerRootfsIsRefusedOverHTTP is issue 14's acceptance 7 through the HTTP
// API on a real BBS: a malformed docker URL is a 400 naming rootfs and the rule, for an
// LRP and a task, and nothing is stored.
func TestMalformedDockerRootfsIsRefusedOverHTTP(t *testing.T) {
	h := newRealBBS(t)
	ctx := t.Context()
	sequence, err := h.db.LatestSequence(ctx)
	require.NoError(t, err)

	cases := []struct{ rootfs, rule string }{
		{"docker://", "nothing after docker://"},
		{"docker:user/image", "docker: must be followed by //"},
		{"docker:///User/Image#v1", "the repository must be lowercase"},
		{"docker:///user/image#bad+tag", "the tag must be"},
		{"docker:///user/image?tag=v1", "a query string (?) is not allowed"},
		{"docker://user:pw@registry.example/user/image", "credentials in the URL"},
	}
	for _, tc := range cases {
		t.Run(tc.rootfs, func(t *testing.T) {
			body := requireError(t, h.do(t, http.MethodPost, "/v1/desired_lrps",
				lrpJSON(t, "docker-lrp", map[string]any{"rootfs": tc.rootfs})), http.StatusBadRequest, "InvalidRequest")
			require.Contains(t, body.Message, "invalid field rootfs: must be a docker image URL: ")
			require.Contains(t, body.Message, tc.rule)

			body = requireError(t, h.do(t, http.MethodPost, "/v1/tasks",
				taskJSON(t, "docker-task", map[string]any{"rootfs": tc.rootfs})), http.StatusBadRequest, "InvalidRequest")
			require.Contains(t, body.Message, "invalid field task_definition.rootfs: must be a docker image URL: ")
			require.Contains(t, body.Message, tc.rule)
		})
	}

	after, err := h.db.LatestSequence(ctx)
	require.NoError(t, err)
	require.Equal(t, sequence, after, "no event")
	lrps, err := h.db.ListDesiredLRPs(ctx, store.DesiredLRPFilter{})
	require.NoError(t, err)
	require.Empty(t, lrps)
	tasks, err := h.db.ListTasks(ctx, store.TaskFilter{})
	require.NoError(t, err)
	require.Empty(t, tasks)
	require.NotContains(t, h.logs.String(), "user:pw", "a refused URL's credentials are not logged")
}

// TestImageCredentialsStayOutOfViewsEventsAndLogs is issue 14's acceptance 4 for the BBS:
// the image password of an LRP and of a task is in no HTTP view (get or list), in no
// event payload and in no log line; the store keeps it for the cells.
func TestImageCredentialsStayOutOfViewsEventsAndLogs(t *testing.T) {
	const password = "pw-5f1d2c9e-never-shown"
	const user = "registry-user-3b7a"
	h := newRealBBS(t)
	ctx := t.Context()
	rootfs := "docker://127.0.0.1:5000/drover/web#v1"

	require.Equal(t, http.StatusCreated, h.do(t, http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "web", map[string]any{
		"rootfs": rootfs, "image_username": user, "image_password": password,
	})).status)
	require.Equal(t, http.StatusOK, h.do(t, http.MethodPut, "/v1/desired_lrps/web",
		`{"image_username": "`+user+`", "image_password": "`+password+`-2", "instances": 2}`).status)
	require.Equal(t, http.StatusCreated, h.do(t, http.MethodPost, "/v1/tasks", taskJSON(t, "job", map[string]any{
		"rootfs": rootfs, "image_username": user, "image_password": password,
	})).status)
	require.Equal(t, http.StatusOK, h.do(t, http.MethodPost, "/v1/tasks/job/cancel", "").status)
	require.Equal(t, http.StatusOK, h.do(t, http.MethodDelete, "/v1/desired_lrps/web", "").status)

	// The store still holds them for the cells (decrypted here, as a cell's read is).
	stored, err := h.db.ListTasks(ctx, store.TaskFilter{})
	require.NoError(t, err)
	require.Len(t, stored, 1)
	require.Equal(t, password, stored[0].GetTaskDefinition().GetImagePassword())

	// Recreate the LRP to read it back.
	require.Equal(t, http.StatusCreated, h.do(t, http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "web", map[string]any{
		"rootfs": rootfs, "image_username": user, "image_password": password,
	})).status)
	lrp, err := h.db.GetDesiredLRP(ctx, "web")
	require.NoError(t, err)
	require.Equal(t, password, lrp.GetImagePassword())

	var seen strings.Builder
	for _, path := range []string{"/v1/desired_lrps", "/v1/desired_lrps/web", "/v1/tasks", "/v1/tasks/job"} {
		resp := h.do(t, http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, resp.status, path)
		require.Contains(t, resp.body, `docker://127.0.0.1:5000/drover/web#v1`, "the view is the real one")
		seen.WriteString(resp.body)
	}
	events, err := h.db.EventsAfter(ctx, 0, 1000)
	require.NoError(t, err)
	types := map[string]bool{}
	for _, e := range events {
		view, err := jsonapi.EventView(e)
		require.NoError(t, err)
		data, err := json.Marshal(view)
		require.NoError(t, err)
		seen.Write(data)
		types[view.Type] = true
	}
	for _, want := range []string{"desired_lrp_created", "desired_lrp_changed", "desired_lrp_removed", "task_created", "task_changed"} {
		require.True(t, types[want], "events include %s: %v", want, types)
	}
	seen.WriteString(h.logs.String())
	require.NotEmpty(t, h.logs.String(), "the requests were logged")
	require.NotContains(t, seen.String(), password, "the password leaked into a view, an event or a log line")
	require.NotContains(t, seen.String(), user, "the user name leaked into a view, an event or a log line")

}
