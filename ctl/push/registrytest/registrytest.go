// Package registrytest serves go-containerregistry's in-memory OCI registry on
// loopback (plain HTTP), optionally behind basic auth, for tests of code that reads
// images from a registry.
package registrytest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a running test registry.
type Registry struct {
	// Host is HOST:PORT on 127.0.0.1.
	Host     string
	user     string
	password string
	requests atomic.Int64
}

// Start serves a registry until the test ends. With a user, every request needs
// basic auth with user and password (else 401 UNAUTHORIZED).
func Start(t testing.TB, user, password string) *Registry {
	t.Helper()
	r := &Registry{user: user, password: password}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="registrytest"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
				return
			}
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Requests is how many HTTP requests reached the registry.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// PushImage writes a random one-layer linux/amd64 image with cfg as repoTag
// ("drover/web:v1") and returns its digest.
func (r *Registry) PushImage(t testing.TB, repoTag string, cfg v1.Config) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	file, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	file = file.DeepCopy()
	file.Config = cfg
	file.OS, file.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, file); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	auth := authn.FromConfig(authn.AuthConfig{Username: r.user, Password: r.password})
	if err := remote.Write(ref, img, remote.WithAuth(auth)); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
