// Package httpapi is the BBS's HTTP/JSON and Server-Sent Events API in the shape of
// the LRP API seed. It is a thin gateway over the BBS gRPC services: every request
// becomes one or a few gRPC calls, so validation and semantics are the gRPC ones.
package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"drover.dev/bbs/client"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxBodyBytes      int64 = 1 << 20
	DefaultHeartbeatInterval       = 15 * time.Second
	DefaultEventWriteTimeout       = 30 * time.Second
)

// Options tune the gateway; zero values take the defaults.
type Options struct {
	// MaxBodyBytes caps request bodies (default 1 MiB); larger ones get 413.
	MaxBodyBytes int64
	// Logger receives one record per request (default slog.Default()).
	Logger *slog.Logger
	// HeartbeatInterval is how often an idle event stream sends a keepalive comment
	// (default 15s).
	HeartbeatInterval time.Duration
	// EventWriteTimeout bounds each write to an event stream (default 30s); a client
	// that does not take it in time is disconnected.
	EventWriteTimeout time.Duration
	// EventStreamTooSlow, when set, is called for each event stream disconnected because
	// a write missed EventWriteTimeout (the BBS counts them in a metric).
	EventStreamTooSlow func()
	// Authorize, when set, may refuse a request before it is served (e.g. a caller
	// whose certificate names a cell); its error is answered like any other.
	Authorize func(*http.Request) error
}

// withDefaults fills the zero fields of o.
func (o Options) withDefaults() Options {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.EventWriteTimeout <= 0 {
		o.EventWriteTimeout = DefaultEventWriteTimeout
	}
	return o
}

// api holds what every handler needs.
type api struct {
	bbs  *client.Client
	opts Options
	log  *slog.Logger
}

// handlerFunc is a handler that writes its own success response and returns the error
// to report otherwise.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// New returns the HTTP handler of the BBS API, calling the BBS through c. A nil client
// makes every call fail as Unavailable.
func New(c *client.Client, opts Options) http.Handler {
	opts = opts.withDefaults()
	a := &api{bbs: c, opts: opts, log: opts.Logger}
	mux := http.NewServeMux()
	routes := []struct {
		pattern string
		handle  handlerFunc
	}{
		{"POST /v1/desired_lrps", a.desireLRP},
		{"GET /v1/desired_lrps", a.listDesiredLRPs},
		{"GET /v1/desired_lrps/{process_guid}", a.getDesiredLRP},
		{"PUT /v1/desired_lrps/{process_guid}", a.updateDesiredLRP},
		{"DELETE /v1/desired_lrps/{process_guid}", a.removeDesiredLRP},
		{"GET /v1/actual_lrps", a.listActualLRPs},
		{"GET /v1/actual_lrps/{process_guid}", a.listActualLRPsOfProcess},
		{"GET /v1/actual_lrps/{process_guid}/index/{index}", a.getActualLRPsAtIndex},
		{"DELETE /v1/actual_lrps/{process_guid}/index/{index}", a.retireActualLRP},
		{"PUT /v1/domains/{domain}", a.upsertDomain},
		{"GET /v1/domains", a.listDomains},
		{"POST /v1/tasks", a.desireTask},
		{"GET /v1/tasks", a.listTasks},
		{"GET /v1/tasks/{task_guid}", a.getTask},
		{"POST /v1/tasks/{task_guid}/cancel", a.cancelTask},
		{"DELETE /v1/tasks/{task_guid}", a.deleteTask},
		{"GET /v1/cells", a.listCells},
		{"PUT /v1/cells/{cell_id}/cordon", a.cordonCell},
		{"DELETE /v1/cells/{cell_id}/cordon", a.uncordonCell},
		{"GET /v1/events", a.streamEvents},
	}
	for _, route := range routes {
		mux.HandleFunc(route.pattern, a.serve(route.handle))
	}
	return a.logRequests(mux)
}

// serve adapts a handlerFunc, answering its error as JSON.
func (a *api) serve(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.bbs == nil {
			a.writeError(w, r, errNoClient)
			return
		}
		if a.opts.Authorize != nil {
			if err := a.opts.Authorize(r); err != nil {
				a.writeError(w, r, err)
				return
			}
		}
		if err := h(w, r); err != nil {
			a.writeError(w, r, err)
		}
	}
}
