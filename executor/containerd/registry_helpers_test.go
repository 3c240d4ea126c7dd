package containerd

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
)

// testRegistry is an in-memory OCI registry (go-containerregistry) on 127.0.0.1 that
// counts the GETs of each manifest and blob, and optionally wants basic auth.
type testRegistry struct {
	t        *testing.T
	srv      *httptest.Server
	Host     string
	user     string
	password string

	mu   sync.Mutex
	gets map[string]int
	// holds are paths (substrings) whose requests wait until their channel closes.
	holds map[string]chan struct{}
}

// hold makes requests for paths containing sub wait until the returned release is called.
func (reg *testRegistry) hold(sub string) (release func()) {
	ch := make(chan struct{})
	reg.mu.Lock()
	reg.holds[sub] = ch
	reg.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	reg.t.Cleanup(release)
	return release
}

// waitHold blocks while a hold covers path.
func (reg *testRegistry) waitHold(path string) {
	reg.mu.Lock()
	var waits []chan struct{}
	for sub, ch := range reg.holds {
		if strings.Contains(path, sub) {
			waits = append(waits, ch)
		}
	}
	reg.mu.Unlock()
	for _, ch := range waits {
		<-ch
	}
}

// newTestRegistry starts a plain HTTP registry; with user set, every request needs basic
// auth.
func newTestRegistry(t *testing.T, user, password string) *testRegistry {
	t.Helper()
	return startTestRegistry(t, user, password, false)
}

// newTLSTestRegistry starts an HTTPS registry (httptest's certificate for 127.0.0.1)
// and returns the path of a PEM file with its certificate.
func newTLSTestRegistry(t *testing.T) (*testRegistry, string) {
	t.Helper()
	reg := startTestRegistry(t, "", "", true)
	caFile := filepath.Join(t.TempDir(), "registry-ca.pem")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: reg.srv.Certificate().Raw})
	require.NoError(t, os.WriteFile(caFile, block, 0o600))
	return reg, caFile
}

func startTestRegistry(t *testing.T, user, password string, useTLS bool) *testRegistry {
	reg := &testRegistry{t: t, user: user, password: password, gets: map[string]int{}, holds: map[string]chan struct{}{}}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	reg.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reg.user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != reg.user || p != reg.password {
				w.Header().Set("WWW-Authenticate", `Basic realm="drover-test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if r.Method == http.MethodGet && (strings.Contains(r.URL.Path, "/blobs/") || strings.Contains(r.URL.Path, "/manifests/")) {
			reg.mu.Lock()
			reg.gets[r.URL.Path]++
			reg.mu.Unlock()
		}
		reg.waitHold(r.URL.Path)
		inner.ServeHTTP(w, r)
	}))
	if useTLS {
		reg.srv.StartTLS()
	} else {
		reg.srv.Start()
	}
	t.Cleanup(reg.srv.Close)
	reg.Host = reg.srv.Listener.Addr().String()
	return reg
}

// push writes img under repo:tag and returns its manifest digest; counts start afresh.
func (reg *testRegistry) push(repo, tag string, img v1.Image) string {
	reg.t.Helper()
	ref, err := name.ParseReference(reg.Host+"/"+repo+":"+tag, name.Insecure)
	require.NoError(reg.t, err)
	auth := authn.Anonymous
	if reg.user != "" {
		auth = &authn.Basic{Username: reg.user, Password: reg.password}
	}
	require.NoError(reg.t, remote.Write(ref, img, remote.WithAuth(auth), remote.WithTransport(reg.srv.Client().Transport)))
	d, err := img.Digest()
	require.NoError(reg.t, err)
	reg.resetCounts()
	return d.String()
}

func (reg *testRegistry) resetCounts() {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.gets = map[string]int{}
}

// counts returns the GETs per path so far.
func (reg *testRegistry) counts() map[string]int {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	out := make(map[string]int, len(reg.gets))
	for k, v := range reg.gets {
		out[k] = v
	}
	return out
}

// Image metadata of the test images.
const (
	testImageUID     = "1234"
	testImageWorkDir = "/srv/web"
)

// testImage is a busybox-based image with a config (USER app, WORKDIR, ENV, ENTRYPOINT,
// CMD, EXPOSE), a /marker file holding marker, and a random layer that makes it unique.
func testImage(t *testing.T, marker string) v1.Image {
	t.Helper()
	base := busyboxLayer(t)
	extra := tarLayer(t, map[string]string{"marker": marker + "\n"}, nil)
	unique, err := random.Layer(512, types.DockerLayer)
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, base, extra, unique)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{
		User:         "app",
		WorkingDir:   testImageWorkDir,
		Env:          []string{"PATH=/bin", "GREETING=hello-from-image", "OVERRIDE=image"},
		Entrypoint:   []string{"/bin/sh", "-c"},
		Cmd:          []string{"echo hi"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
	}
	img, err = mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	return img
}

var (
	busyboxLayerOnce sync.Once
	busyboxLayerTar  []byte
	busyboxLayerErr  error
)

// busyboxLayer is a layer with the host's static busybox as /bin/busybox, its applets as
// symlinks, /etc/passwd and /etc/group (root and app), and the app's home and workdir.
func busyboxLayer(t *testing.T) v1.Layer {
	t.Helper()
	busyboxLayerOnce.Do(func() {
		bin, err := os.ReadFile(DefaultBusyboxPath)
		if err != nil {
			busyboxLayerErr = err
			return
		}
		files := map[string]string{
			"bin/busybox": string(bin),
			"etc/passwd":  "root:x:0:0:root:/root:/bin/sh\napp:x:" + testImageUID + ":" + testImageUID + ":app:/home/app:/bin/sh\n",
			"etc/group":   "root:x:0:\napp:x:" + testImageUID + ":\n",
		}
		links := map[string]string{}
		for _, applet := range []string{"sh", "id", "pwd", "cat", "env", "echo", "sleep", "ls", "test"} {
			links["bin/"+applet] = "busybox"
		}
		busyboxLayerTar, busyboxLayerErr = tarBytes(files, links, []string{"bin", "etc", "root", "home", "home/app", "srv", "srv/web", "tmp"})
	})
	require.NoError(t, busyboxLayerErr)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(busyboxLayerTar)), nil
	})
	require.NoError(t, err)
	return layer
}

// tarLayer is a layer of the given files and symlinks.
func tarLayer(t *testing.T, files, links map[string]string) v1.Layer {
	t.Helper()
	b, err := tarBytes(files, links, nil)
	require.NoError(t, err)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	require.NoError(t, err)
	return layer
}

func tarBytes(files, links map[string]string, dirs []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range dirs {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode}); err != nil {
			return nil, err
		}
	}
	for path, body := range files {
		mode := int64(0o644)
		if strings.HasPrefix(path, "bin/") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: mode, Size: int64(len(body))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return nil, err
		}
	}
	for path, target := range links {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: path, Linkname: target, Mode: 0o777}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	return buf.Bytes(), nil
}
