// Package debugserver serves a drover process's operator endpoints: Prometheus /metrics
// and /healthz on its debug address, which may be any address; /debug/pprof/* and
// /log-level (read or change the slog level at run time) only on loopback or a unix
// socket, or nowhere (the rules: drover.dev/lib/config.DebugServer).
package debugserver

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"drover.dev/lib/logging"
)

// maxLevelBody bounds a /log-level request body.
const maxLevelBody = 64

// NewRegistry returns a process registry holding the Go runtime and process collectors;
// every metric of the process registers on it.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler routes every debug endpoint: MetricsHandler's, pprof under /debug/pprof/
// and /log-level. A nil reg serves a fresh NewRegistry; a nil level leaves /log-level
// out. New serves it only on loopback or a unix socket.
func Handler(reg *prometheus.Registry, level *slog.LevelVar) http.Handler {
	mux := metricsMux(reg)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if level != nil {
		mux.Handle("/log-level", levelHandler{level: level})
	}
	return mux
}

// MetricsHandler routes the endpoints that may be served to any host: GET /metrics
// (Prometheus text from reg, a fresh NewRegistry when nil) and GET /healthz.
func MetricsHandler(reg *prometheus.Registry) http.Handler { return metricsMux(reg) }

func metricsMux(reg *prometheus.Registry) *http.ServeMux {
	if reg == nil {
		reg = NewRegistry()
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// levelHandler shows the level on GET and sets it from the body ("debug", "info",
// "warn" or "error") on PUT or POST.
type levelHandler struct {
	level *slog.LevelVar
}

func (h levelHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPut, http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLevelBody))
		if err != nil {
			http.Error(w, "log level body too large", http.StatusRequestEntityTooLarge)
			return
		}
		parsed, err := logging.ParseLevel(strings.Trim(strings.TrimSpace(string(body)), `"`))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.level.Set(parsed)
	default:
		w.Header().Set("Allow", "GET, PUT, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, logging.LevelName(h.level.Level()))
}
