package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/httpapi"
	"drover.dev/bbs/jsonapi"
)

// requireError checks an error response's status, content type and JSON type.
func requireError(t *testing.T, resp response, status int, errType string) jsonapi.Error {
	t.Helper()
	require.Equal(t, status, resp.status, "body: %s", resp.body)
	require.Equal(t, "application/json", resp.header.Get("Content-Type"))
	var body jsonapi.Error
	require.NoError(t, json.Unmarshal([]byte(resp.body), &body))
	require.Equal(t, errType, body.Type)
	require.NotEmpty(t, body.Message)
	return body
}

func TestErrorStatusMapping(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, nil)
	tests := []struct {
		guid     string
		status   int
		wantType string
	}{
		{"err-InvalidRequest", http.StatusBadRequest, "InvalidRequest"},
		{"err-InvalidJSON", http.StatusBadRequest, "InvalidJSON"},
		{"err-ResourceNotFound", http.StatusNotFound, "ResourceNotFound"},
		{"err-ResourceExists", http.StatusConflict, "ResourceExists"},
		{"err-ResourceConflict", http.StatusConflict, "ResourceConflict"},
		{"err-InvalidStateTransition", http.StatusConflict, "InvalidStateTransition"},
		{"err-RunningOnDifferentCell", http.StatusConflict, "RunningOnDifferentCell"},
		{"err-LockCollision", http.StatusConflict, "LockCollision"},
		{"err-ResyncRequired", http.StatusGone, "ResyncRequired"},
		{"err-Unavailable", http.StatusServiceUnavailable, "Unavailable"},
		{"err-UnknownError", http.StatusInternalServerError, "UnknownError"},
		{"grpc-Unavailable", http.StatusServiceUnavailable, "Unavailable"},
		{"grpc-NotFound", http.StatusNotFound, "ResourceNotFound"},
		{"grpc-Internal", http.StatusInternalServerError, "UnknownError"},
	}
	for _, tt := range tests {
		t.Run(tt.guid, func(t *testing.T) {
			resp := h.do(t, http.MethodGet, "/v1/desired_lrps/"+tt.guid, "")
			requireError(t, resp, tt.status, tt.wantType)
		})
	}
}

func TestBodyLimit(t *testing.T) {
	h := newHarness(t, httpapi.Options{MaxBodyBytes: 64}, nil)
	big := `{"process_guid": "p", "annotation": "` + strings.Repeat("x", 100) + `"}`
	tests := []struct {
		name   string
		method string
		path   string
	}{
		{"desire LRP", http.MethodPost, "/v1/desired_lrps"},
		{"update LRP", http.MethodPut, "/v1/desired_lrps/p"},
		{"desire task", http.MethodPost, "/v1/tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := requireError(t, h.do(t, tt.method, tt.path, big), http.StatusRequestEntityTooLarge, "InvalidRequest")
			require.Contains(t, body.Message, "64 bytes")
		})
	}
	require.Empty(t, h.desired.all(), "no call reaches the BBS")
	require.Empty(t, h.tasks.all())

	t.Run("a body at the limit passes", func(t *testing.T) {
		exact := `{"process_guid": "p", "instances": 1}`
		exact += strings.Repeat(" ", 64-len(exact))
		resp := h.do(t, http.MethodPost, "/v1/desired_lrps", exact)
		require.Equal(t, http.StatusCreated, resp.status, resp.body)
	})
}

func TestRequestsAreLogged(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, nil)
	require.Equal(t, http.StatusNotFound, h.do(t, http.MethodGet, "/v1/desired_lrps/missing", "").status)

	require.Eventually(t, func() bool {
		for line := range strings.Lines(h.logs.String()) {
			var record map[string]any
			if json.Unmarshal([]byte(line), &record) != nil {
				continue
			}
			if record["msg"] == "request-served" && record["method"] == "GET" &&
				record["path"] == "/v1/desired_lrps/missing" && record["status"] == float64(404) {
				_, hasDuration := record["duration"]
				return hasDuration
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "logs: %s", h.logs.String())
}

func TestNilClientAnswersUnavailable(t *testing.T) {
	web := httptest.NewServer(httpapi.New(nil, httpapi.Options{}))
	defer web.Close()
	resp, err := http.Get(web.URL + "/v1/domains")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	var body jsonapi.Error
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "Unavailable", body.Type)
}
