package router

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
)

// Headers the stand-in router sets, as gorouter does.
const (
	// HeaderRouterError says why the router answered itself ("unknown_route",
	// "endpoint_failure").
	HeaderRouterError = "X-Cf-Routererror"
	// HeaderEndpoint (response) names the backend address that served the request.
	HeaderEndpoint = "X-Standin-Router-Endpoint"
	// HeaderInstanceID and HeaderInstanceIndex (request and response) name the instance.
	HeaderInstanceID    = "X-Cf-Instanceid"
	HeaderInstanceIndex = "X-Cf-Instanceindex"
	// HeaderApplicationID (request) is the registration's app (log guid).
	HeaderApplicationID = "X-Cf-Applicationid"
)

// backendTransport proxies to backends; TLS endpoints are reached over TLS without
// verification (the stand-in checks no SAN).
var backendTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // test router
	t.MaxIdleConnsPerHost = 16
	return t
}()

// pick chooses the next endpoint of the pool serving the request, round robin.
func (r *Router) pick(host, path string) (Endpoint, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	uri, eps := r.table.Lookup(host, path)
	if len(eps) == 0 {
		return Endpoint{}, false
	}
	i := r.next[uri] % len(eps)
	r.next[uri] = i + 1
	return eps[i], true
}

func (r *Router) serveProxy(w http.ResponseWriter, req *http.Request) {
	ep, ok := r.pick(req.Host, req.URL.Path)
	if !ok {
		w.Header().Set(HeaderRouterError, "unknown_route")
		http.Error(w, "404 Not Found: Requested route ('"+req.Host+"') does not exist.", http.StatusNotFound)
		return
	}
	proxy := &httputil.ReverseProxy{
		Transport: &retryingTransport{router: r, first: ep},
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(ep.url())
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			failed := ep
			var epErr *endpointError
			if errors.As(err, &epErr) {
				failed = epErr.endpoint
			}
			r.logger.Info("backend-failed", "address", failed.Address, "error", err)
			w.Header().Set(HeaderRouterError, "endpoint_failure")
			w.Header().Set(HeaderEndpoint, failed.Address)
			http.Error(w, "502 Bad Gateway: "+err.Error(), http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(w, req)
}

// maxAttempts is gorouter's default: a request whose backend cannot be reached is tried
// on up to this many endpoints of the pool.
const maxAttempts = 3

// retryingTransport sends a request to its endpoint and, as gorouter does, to the
// pool's next endpoints when the connection could not be made (the request never
// reached a backend, so retrying is safe for any method).
type retryingTransport struct {
	router *Router
	first  Endpoint
}

// endpointError is a failed attempt and the endpoint it went to.
type endpointError struct {
	endpoint Endpoint
	err      error
}

func (e *endpointError) Error() string { return e.err.Error() }
func (e *endpointError) Unwrap() error { return e.err }

func (t *retryingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ep := t.first
	for attempt := 1; ; attempt++ {
		out := req.Clone(req.Context())
		target := ep.url()
		out.URL.Scheme, out.URL.Host = target.Scheme, target.Host
		out.Header.Set(HeaderApplicationID, ep.App)
		out.Header.Set(HeaderInstanceID, ep.PrivateInstanceID)
		out.Header.Set(HeaderInstanceIndex, ep.Index)
		resp, err := backendTransport.RoundTrip(out)
		if err == nil {
			resp.Header.Set(HeaderEndpoint, ep.Address)
			resp.Header.Set(HeaderInstanceID, ep.PrivateInstanceID)
			resp.Header.Set(HeaderInstanceIndex, ep.Index)
			return resp, nil
		}
		if attempt >= maxAttempts || !isDialError(err) {
			return nil, &endpointError{endpoint: ep, err: err}
		}
		next, ok := t.router.pick(req.Host, req.URL.Path)
		if !ok {
			return nil, &endpointError{endpoint: ep, err: err}
		}
		t.router.logger.Info("backend-retry", "address", ep.Address, "next", next.Address, "attempt", attempt, "error", err)
		ep = next
	}
}

// isDialError reports a connection that was never established (refused, unreachable).
func isDialError(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// url is the endpoint's base URL.
func (e Endpoint) url() *url.URL {
	if e.TLS() {
		return &url.URL{Scheme: "https", Host: e.Address}
	}
	return &url.URL{Scheme: "http", Host: e.Address}
}

// adminHandler serves GET /routes (URI → endpoints), GET /stats and GET /healthz (200
// while NATS is connected).
func (r *Router) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /routes", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, r.Routes())
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, r.Stats())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !r.Connected() {
			http.Error(w, "nats is not connected", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	_, _ = w.Write(append(data, '\n'))
}
