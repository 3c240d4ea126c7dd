package callback

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"drover.dev/lib/authz"
	"drover.dev/lib/logging"
)

// Handler serves POST /v1/stagings/{task_guid}/completed to callers whose verified
// client certificate has role bbs (403 otherwise): 400 for a bad body or a guid that
// differs from the path's, 200 otherwise (also for an unknown task: a stale callback
// must not be retried forever).
type Handler struct {
	names    authz.Names
	registry *Registry
	logger   *slog.Logger
	mux      *http.ServeMux
}

// NewHandler builds the handler.
func NewHandler(names authz.Names, registry *Registry, logger *slog.Logger) *Handler {
	h := &Handler{names: names, registry: registry, logger: logging.OrDiscard(logger), mux: http.NewServeMux()}
	h.mux.HandleFunc("POST /v1/stagings/{task_guid}/completed", h.completed)
	return h
}

// ServeHTTP authorises the caller, then routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := h.identify(r.TLS)
	if err != nil {
		h.logger.Info("callback-refused", "path", r.URL.Path, "reason", err.Error())
		http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	if id.Role != authz.RoleBBS {
		h.logger.Info("callback-refused", "path", r.URL.Path, "identity", id.String())
		http.Error(w, "forbidden: "+id.String()+" may not post staging callbacks", http.StatusForbidden)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) identify(state *tls.ConnectionState) (authz.Identity, error) {
	if state == nil || len(state.VerifiedChains) == 0 {
		return authz.Identity{}, errors.New("a verified client certificate is required")
	}
	return h.names.Identify(state.VerifiedChains[0])
}

func (h *Handler) completed(w http.ResponseWriter, r *http.Request) {
	guid := r.PathValue("task_guid")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	c, err := DecodeCompletion(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if c.TaskGUID != guid {
		http.Error(w, "task_guid "+c.TaskGUID+" differs from the path's "+guid, http.StatusBadRequest)
		return
	}
	if !h.registry.Deliver(c) {
		h.logger.Info("callback-for-unknown-staging", "task_guid", guid, "failed", c.Failed)
	} else {
		h.logger.Info("callback-received", "task_guid", guid, "failed", c.Failed)
	}
	w.WriteHeader(http.StatusOK)
}
