// Package server is the fileserver's HTTP transport: static files under /v1/static/,
// signed blob uploads and downloads under /v1/blobs/, resource matching and package
// uploads. Handlers are thin: the work is in drover.dev/fileserver/blobstore.
package server

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"drover.dev/fileserver/blobstore"
	"drover.dev/lib/httpserver"
	"drover.dev/lib/logging"
)

// Options configure a Server.
type Options struct {
	// StaticDir is served read-only under /v1/static/.
	StaticDir string
	// Store keeps blobs and the resource pool.
	Store *blobstore.Store
	// SigningKey verifies signed upload URLs.
	SigningKey []byte
	// Limits cap package uploads.
	Limits blobstore.PackageLimits
	// MaxBlobBytes caps one blob upload.
	MaxBlobBytes int64
	// MaxPackageListBytes caps the "resources" field of a package upload.
	MaxPackageListBytes int64
	// Match bounds resource matching.
	Match MatchLimits
	// Metrics are required.
	Metrics *Metrics
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Now defaults to time.Now (signature expiry).
	Now func() time.Time
}

// Server is the fileserver's http.Handler.
type Server struct {
	opts    Options
	matches chan struct{} // a slot per resource match in progress
	static  *os.Root
	etags   *etagCache
	mux     *http.ServeMux
	routes  map[string]string
	logger  *slog.Logger
	metrics *Metrics
}

// New opens the static directory and routes the API.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.Metrics == nil {
		return nil, errors.New("server: Store and Metrics are required")
	}
	if opts.MaxPackageListBytes <= 0 {
		return nil, errors.New("server: MaxPackageListBytes must be positive")
	}
	if err := opts.Match.check(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	root, err := os.OpenRoot(opts.StaticDir)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, matches: make(chan struct{}, opts.Match.MaxConcurrent), static: root, etags: newETagCache(), mux: http.NewServeMux(), routes: map[string]string{},
		logger: logging.OrDiscard(opts.Logger), metrics: opts.Metrics}
	s.handle("GET /healthz", "healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.handle("GET /v1/static/{path...}", "static", s.serveStatic)
	s.handle("GET /v1/blobs/{key...}", "blob-download", s.downloadBlob)
	s.handle("PUT /v1/blobs/{key...}", "blob-upload", s.uploadBlob)
	s.handle("POST /v1/blobs/{key...}", "blob-upload", s.uploadBlob)
	s.handle("POST /v1/resource_match", "resource-match", s.matchResources)
	s.handle("POST /v1/packages", "package-upload", s.uploadPackage)
	return s, nil
}

// Close releases the static directory.
func (s *Server) Close() error { return s.static.Close() }

// handle registers a route and its metrics name.
func (s *Server) handle(pattern, name string, h http.HandlerFunc) {
	s.routes[pattern] = name
	s.mux.HandleFunc(pattern, h)
}

// ServeHTTP refuses paths with a ".." segment (before the mux would redirect them),
// routes the request and counts it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &httpserver.StatusRecorder{ResponseWriter: w}
	route := "invalid-path"
	if hasDotDot(r.URL.Path) {
		s.refuse(rec, r, http.StatusBadRequest, "path-escape", "invalid path: \"..\" segment")
	} else {
		s.mux.ServeHTTP(rec, r)
		route = s.routes[r.Pattern]
		if route == "" {
			route = "unmatched"
		}
	}
	if rec.Status == 0 {
		rec.Status = http.StatusOK
	}
	s.metrics.Requests.WithLabelValues(route, strconv.Itoa(rec.Status)).Inc()
}

// hasDotDot reports whether the (decoded) path has a ".." segment.
func hasDotDot(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// refuse answers a refused request with status and message, counts it by reason and
// logs it ("upload-refused" for uploads, "request-refused" otherwise).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, reason, message string) {
	s.metrics.Refusals.WithLabelValues(reason).Inc()
	msg := "request-refused"
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		msg = "upload-refused"
	}
	s.logger.Info(msg, "reason", reason, "error", message, "method", r.Method, "path", r.URL.Path, "status", status)
	http.Error(w, message, status)
}

// fail answers an internal error.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.logger.Error("request-failed", "error", err.Error(), "method", r.Method, "path", r.URL.Path)
	http.Error(w, "internal error", http.StatusInternalServerError)
}
