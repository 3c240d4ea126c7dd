package router

import (
	"crypto/tls"
	"encoding/json"
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
	target := &url.URL{Scheme: "http", Host: ep.Address}
	if ep.TLS() {
		target.Scheme = "https"
	}
	proxy := &httputil.ReverseProxy{
		Transport: backendTransport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			pr.Out.Header.Set(HeaderApplicationID, ep.App)
			pr.Out.Header.Set(HeaderInstanceID, ep.PrivateInstanceID)
			pr.Out.Header.Set(HeaderInstanceIndex, ep.Index)
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(HeaderEndpoint, ep.Address)
			resp.Header.Set(HeaderInstanceID, ep.PrivateInstanceID)
			resp.Header.Set(HeaderInstanceIndex, ep.Index)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			r.logger.Info("backend-failed", "address", ep.Address, "error", err)
			w.Header().Set(HeaderRouterError, "endpoint_failure")
			w.Header().Set(HeaderEndpoint, ep.Address)
			http.Error(w, "502 Bad Gateway: "+err.Error(), http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(w, req)
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
