package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"

	"drover.dev/bbs/client"
	"drover.dev/bbs/httpapi"
	"drover.dev/bbs/models"
	"drover.dev/bbs/server"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	repclient "drover.dev/rep/client"
)

// realBBS is the HTTP API over a real BBS (the gRPC services with their interceptors, on a
// fresh database), wired as the bbs binary wires it, so that validation is the real one.
type realBBS struct {
	*harness
	db *store.Postgres
}

func newRealBBS(t *testing.T) *realBBS {
	t.Helper()
	db := storetest.NewStore(t)
	reps := repclient.NewPool(nil, repclient.Options{})
	t.Cleanup(func() { _ = reps.Close() })
	// Every log line of the BBS and of the gateway, at every level, goes to logs.
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	api := server.New(server.Deps{DB: db, Reps: reps, Logger: logger})
	t.Cleanup(api.Wait)
	listener := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(server.UnaryInterceptor(logger)),
		grpc.ChainStreamInterceptor(server.StreamInterceptor(logger)),
	)
	api.Register(srv)
	go func() { _ = srv.Serve(listener) }()
	t.Cleanup(srv.Stop)

	bbs, err := client.New("passthrough:///bufnet", nil, grpc.WithContextDialer(
		func(ctx context.Context, _ string) (net.Conn, error) { return listener.DialContext(ctx) }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bbs.Close() })
	web := httptest.NewServer(httpapi.New(bbs, httpapi.Options{Logger: logger}))
	t.Cleanup(web.Close)
	return &realBBS{harness: &harness{url: web.URL, logs: logs}, db: db}
}

// lrpJSON is a valid DesiredLRPCreateRequest for guid, with fields replaced or added.
func lrpJSON(t *testing.T, guid string, fields map[string]any) string {
	t.Helper()
	body := map[string]any{
		"process_guid": guid,
		"domain":       "cf-apps",
		"instances":    1,
		"rootfs":       "preloaded:cflinuxfs4",
		"ports":        []int{8080},
		"action":       map[string]any{"run": map[string]any{"path": "/bin/sh", "user": "vcap"}},
		"routes":       map[string]any{"cf-router": []any{map[string]any{"hostnames": []string{"a.example.com"}, "port": 8080}}},
	}
	for k, v := range fields {
		body[k] = v
	}
	data, err := json.Marshal(body)
	require.NoError(t, err)
	return string(data)
}

// taskJSON is a valid task request with task definition fields replaced or added.
func taskJSON(t *testing.T, guid string, definition map[string]any) string {
	t.Helper()
	def := map[string]any{
		"rootfs": "preloaded:cflinuxfs4",
		"action": map[string]any{"run": map[string]any{"path": "/bin/true", "user": "vcap"}},
	}
	for k, v := range definition {
		def[k] = v
	}
	data, err := json.Marshal(map[string]any{"task_guid": guid, "domain": "tasks", "task_definition": def})
	require.NoError(t, err)
	return string(data)
}

// serialJSON is a JSON action tree depth serial actions deep.
func serialJSON(depth int) any {
	var a any = map[string]any{"run": map[string]any{"path": "/bin/true", "user": "vcap"}}
	for range depth - 1 {
		a = map[string]any{"serial": map[string]any{"actions": []any{a}}}
	}
	return a
}

// nestedArrays is a JSON value depth arrays deep.
func nestedArrays(depth int) any {
	var v any = "leaf"
	for range depth {
		v = []any{v}
	}
	return v
}

func repeatedJSON(n int, item func(i int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = item(i)
	}
	return out
}

// TestInputLimitsOverHTTP sends a request over each limit of models/limits.go through the
// HTTP API: each is a 400 naming the field and the limit, and nothing changes.
func TestInputLimitsOverHTTP(t *testing.T) {
	h := newRealBBS(t)
	require.Equal(t, http.StatusCreated, h.do(t, http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "existing", nil)).status)
	require.Equal(t, http.StatusCreated, h.do(t, http.MethodPost, "/v1/tasks", taskJSON(t, "existing-task", nil)).status)
	ctx := t.Context()
	sequence, err := h.db.LatestSequence(ctx)
	require.NoError(t, err)

	long := strings.Repeat("a", models.MaxIdentifierLength+1)
	tooDeep := "action" + strings.Repeat(".serial.actions[0]", models.MaxActionDepth)
	run := map[string]any{"run": map[string]any{"path": "/bin/true", "user": "vcap"}}
	cases := []struct {
		name         string
		method, path string
		body         string
		errType      string
		want         []string
	}{
		{"action tree depth", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{"action": serialJSON(models.MaxActionDepth + 1)}),
			"InvalidRequest", []string{"invalid field " + tooDeep + ": action trees must be at most 16 actions deep"}},
		{"the issue's 4998-deep serial tree", http.MethodPost, "/v1/desired_lrps",
			`{"process_guid": "lrp", "action": ` + strings.Repeat(`{"serial": {"actions": [`, 4998) + `{"run": {}}` + strings.Repeat(`]}}`, 4998) + `}`,
			"InvalidJSON", []string{"arrays and objects must nest at most 100 levels deep"}},
		{"action list width", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{
			"action": map[string]any{"codependent": map[string]any{"actions": repeatedJSON(models.MaxActionChildren+1, func(int) any { return run })}},
		}), "InvalidRequest", []string{"invalid field action.codependent.actions: must have at most 100 actions"}},
		{"timeout", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{
			"action": map[string]any{"timeout": map[string]any{"timeout_ms": int64(1) << 62, "action": run}},
		}), "InvalidRequest", []string{"invalid field action.timeout.timeout_ms: must be at most 2592000000"}},
		{"number of ports", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{"ports": []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}),
			"InvalidRequest", []string{"invalid field ports: must have at most 10 ports"}},
		{"duplicate ports", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{"ports": []int{8080, 2222, 8080}}),
			"InvalidRequest", []string{"invalid field ports[2]: must not repeat port 8080 (ports[0])"}},
		{"instances", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{"instances": models.MaxInstances + 1}),
			"InvalidRequest", []string{"invalid field instances: must be at most 10000"}},
		{"instances of an update", http.MethodPut, "/v1/desired_lrps/existing", `{"instances": 10001}`,
			"InvalidRequest", []string{"invalid field instances: must be at most 10000"}},
		{"instances as a string", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{"instances": "3"}),
			"InvalidJSON", []string{"invalid field instances: must be a JSON number, not a string"}},
		{"instances of an update as a string", http.MethodPut, "/v1/desired_lrps/existing", `{"instances": "3"}`,
			"InvalidJSON", []string{"invalid field instances: must be a JSON number, not a string"}},
		{"nested numbers as strings", http.MethodPost, "/v1/tasks", taskJSON(t, "task", map[string]any{
			"memory_mb": "64", "action": map[string]any{"timeout": map[string]any{"timeout_ms": "1000", "action": run}},
		}), "InvalidJSON", []string{
			"invalid field task_definition.memory_mb: must be a JSON number", "invalid field task_definition.action.timeout.timeout_ms: must be a JSON number",
		}},
		{"a 900 KB guid", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, strings.Repeat("g", 900*1024), nil),
			"InvalidRequest", []string{"invalid field process_guid: must be at most 255 bytes"}},
		{"identifier lengths", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{
			"domain": long, "log_guid": long, "log_source": long, "metrics_guid": long,
		}), "InvalidRequest", []string{
			"invalid field domain: must be at most 255 bytes", "invalid field log_guid: must be at most 255 bytes",
			"invalid field log_source: must be at most 255 bytes", "invalid field metrics_guid: must be at most 255 bytes",
		}},
		{"control characters in identifiers", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{
			"domain": "cf\u0000apps", "log_guid": "log\u001b[2J",
		}), "InvalidRequest", []string{
			"invalid field domain: must not contain control characters (U+0000 at byte 2)",
			"invalid field log_guid: must not contain control characters (U+001B at byte 3)",
		}},
		{"other strings", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{
			"annotation": "a\u0000", "env": []any{map[string]any{"name": "BIG", "value": strings.Repeat("v", models.MaxStringLength+1)}},
		}), "InvalidRequest", []string{"invalid field annotation: must not contain NUL characters", "invalid field env[0].value: must be at most 131072 bytes"}},
		{"environment", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{
			"env": repeatedJSON(models.MaxEnvironmentVariables+1, func(i int) any { return map[string]any{"name": fmt.Sprint("V", i)} }),
		}), "InvalidRequest", []string{"invalid field env: must have at most 256 variables"}},
		{"egress rules", http.MethodPost, "/v1/desired_lrps", lrpJSON(t, "lrp", map[string]any{
			"egress_rules": repeatedJSON(models.MaxEgressRules+1, func(int) any { return map[string]any{"protocol": "all", "destinations": []string{"10.0.0.1"}} }),
		}), "InvalidRequest", []string{"invalid field egress_rules: must have at most 1000 rules"}},
		{"placement tags", http.MethodPost, "/v1/tasks", taskJSON(t, "task", map[string]any{
			"placement_tags": repeatedJSON(models.MaxPlacementTags+1, func(i int) any { return fmt.Sprint("tag-", i) }),
		}), "InvalidRequest", []string{"invalid field task_definition.placement_tags: must have at most 32 entries"}},
		{"metric tag names", http.MethodPut, "/v1/desired_lrps/existing", `{"metric_tags": {"` + long + `": {"static": "v"}}}`,
			"InvalidRequest", []string{"key must be at most 255 bytes"}},
		{"routes depth", http.MethodPut, "/v1/desired_lrps/existing", `{"routes": {"deep": ` + mustJSON(t, nestedArrays(models.MaxRoutesDepth+1)) + `}}`,
			"InvalidRequest", []string{"invalid field routes[deep]: must nest at most 16 levels of arrays and objects"}},
		{"routes size", http.MethodPut, "/v1/desired_lrps/existing", `{"routes": {"cf-router": "` + strings.Repeat("r", models.MaxRoutesLength) + `"}}`,
			"InvalidRequest", []string{"invalid field routes: must be at most 131072 bytes of JSON in total"}},
		{"NUL in routes", http.MethodPut, "/v1/desired_lrps/existing", `{"routes": {"cf-router": [{"hostnames": ["a\u0000"]}]}}`,
			"InvalidRequest", []string{"invalid field routes[cf-router]: must not contain NUL characters"}},
		{"annotation", http.MethodPut, "/v1/desired_lrps/existing", `{"annotation": "` + strings.Repeat("a", models.MaxAnnotationLength+1) + `"}`,
			"InvalidRequest", []string{"invalid field annotation: must be at most 10240 bytes"}},
		{"task guid", http.MethodPost, "/v1/tasks", taskJSON(t, long, nil),
			"InvalidRequest", []string{"invalid field task_guid: must be at most 255 bytes"}},
		{"task action depth", http.MethodPost, "/v1/tasks", taskJSON(t, "task", map[string]any{"action": serialJSON(models.MaxActionDepth + 1)}),
			"InvalidRequest", []string{"invalid field task_definition." + tooDeep + ": action trees must be at most 16 actions deep"}},
		{"a domain in the path", http.MethodPut, "/v1/domains/" + long, ``,
			"InvalidRequest", []string{"invalid field domain: must be at most 255 bytes"}},
		{"NUL in a path", http.MethodPut, "/v1/domains/cf%00apps", ``,
			"InvalidRequest", []string{"invalid field domain: must not contain control characters"}},
		{"a guid in the path of a read", http.MethodGet, "/v1/desired_lrps/" + long, ``,
			"InvalidRequest", []string{"invalid field process_guid: must be at most 255 bytes"}},
		{"a query filter", http.MethodGet, "/v1/actual_lrps?cell_id=" + url.QueryEscape("cell\x1b"), ``,
			"InvalidRequest", []string{"invalid field cell_id: must not contain control characters"}},
		{"a cell id in the path", http.MethodPut, "/v1/cells/" + long + "/cordon", ``,
			"InvalidRequest", []string{"invalid field cell_id: must be at most 255 bytes"}},
		{"cordon reason", http.MethodPut, "/v1/cells/cell-1/cordon", `{"reason": "` + strings.Repeat("r", models.MaxReasonLength+1) + `"}`,
			"InvalidRequest", []string{"invalid field reason: must be at most 1024 bytes"}},
		{"cordon reason with NUL", http.MethodPut, "/v1/cells/cell-1/cordon", `{"reason": "disk\u0000"}`,
			"InvalidRequest", []string{"invalid field reason: must not contain NUL characters"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := requireError(t, h.do(t, tc.method, tc.path, tc.body), http.StatusBadRequest, tc.errType)
			for _, want := range tc.want {
				require.Contains(t, body.Message, want)
			}
			require.Less(t, len(body.Message), 8*1024, "the message stays short")
		})
	}

	t.Run("a body over the limit", func(t *testing.T) {
		big := lrpJSON(t, "lrp", map[string]any{"annotation": strings.Repeat("a", int(httpapi.DefaultMaxBodyBytes))})
		body := requireError(t, h.do(t, http.MethodPost, "/v1/desired_lrps", big), http.StatusRequestEntityTooLarge, "InvalidRequest")
		require.Contains(t, body.Message, "1048576 bytes")
	})

	t.Run("nothing changed", func(t *testing.T) {
		after, err := h.db.LatestSequence(ctx)
		require.NoError(t, err)
		require.Equal(t, sequence, after, "no event")
		lrps, err := h.db.ListDesiredLRPs(ctx, store.DesiredLRPFilter{})
		require.NoError(t, err)
		require.Len(t, lrps, 1)
		require.EqualValues(t, 1, lrps[0].GetInstances())
		require.Len(t, lrps[0].GetRoutes(), 1)
		require.Empty(t, lrps[0].GetAnnotation())
		require.Empty(t, lrps[0].GetMetricTags())
		tasks, err := h.db.ListTasks(ctx, store.TaskFilter{})
		require.NoError(t, err)
		require.Len(t, tasks, 1)
		domains, err := h.db.ListFreshDomains(ctx)
		require.NoError(t, err)
		require.Empty(t, domains)
		wasCordoned, err := h.db.UncordonCell(ctx, "cell-1")
		require.NoError(t, err)
		require.False(t, wasCordoned)
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}
