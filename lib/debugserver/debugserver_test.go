package debugserver

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

func TestEndpoints(t *testing.T) {
	reg := NewRegistry()
	requests := prometheus.NewCounter(prometheus.CounterOpts{Name: "drover_test_requests_total", Help: "test"})
	reg.MustRegister(requests)
	requests.Add(3)
	srv := httptest.NewServer(Handler(reg, new(slog.LevelVar)))
	defer srv.Close()

	tests := []struct {
		path     string
		status   int
		contains []string
	}{
		{path: "/metrics", status: 200, contains: []string{"drover_test_requests_total 3", "go_goroutines", "process_cpu_seconds_total"}},
		{path: "/healthz", status: 200, contains: []string{"ok"}},
		{path: "/debug/pprof/", status: 200, contains: []string{"goroutine"}},
		{path: "/debug/pprof/cmdline", status: 200},
		{path: "/debug/pprof/goroutine?debug=1", status: 200, contains: []string{"goroutine profile"}},
		{path: "/nothing", status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, body := do(t, http.MethodGet, srv.URL+tt.path, "")
			require.Equal(t, tt.status, status)
			for _, want := range tt.contains {
				require.Contains(t, body, want)
			}
		})
	}
}

func TestLogLevel(t *testing.T) {
	level := new(slog.LevelVar)
	srv := httptest.NewServer(Handler(nil, level))
	defer srv.Close()
	url := srv.URL + "/log-level"

	tests := []struct {
		name   string
		method string
		body   string
		status int
		want   slog.Level
	}{
		{name: "show", method: http.MethodGet, status: 200, want: slog.LevelInfo},
		{name: "set debug", method: http.MethodPut, body: "debug\n", status: 200, want: slog.LevelDebug},
		{name: "set quoted", method: http.MethodPost, body: `"error"`, status: 200, want: slog.LevelError},
		{name: "unknown level", method: http.MethodPut, body: "chatty", status: 400, want: slog.LevelError},
		{name: "huge body", method: http.MethodPut, body: strings.Repeat("x", 1000), status: 413, want: slog.LevelError},
		{name: "wrong method", method: http.MethodDelete, status: 405, want: slog.LevelError},
		{name: "set warn", method: http.MethodPut, body: "WARN", status: 200, want: slog.LevelWarn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, tt.method, url, tt.body)
			require.Equal(t, tt.status, status, body)
			require.Equal(t, tt.want, level.Level())
			if status == 200 {
				require.Equal(t, strings.ToLower(tt.want.String())+"\n", body)
			}
		})
	}
}

func TestNoLogLevelWithoutLevelVar(t *testing.T) {
	srv := httptest.NewServer(Handler(nil, nil))
	defer srv.Close()
	status, _ := do(t, http.MethodGet, srv.URL+"/log-level", "")
	require.Equal(t, 404, status)
}
