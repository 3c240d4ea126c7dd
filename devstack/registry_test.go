package devstack

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/images"
	"drover.dev/lib/testenv"
)

// TestRegistriesServeTheImagesAndAuthenticate starts the two registries of a stack
// without anything else: both hold the standard images, the TLS one refuses missing and
// wrong credentials, the access log counts each blob GET, the password is kept 0600,
// and Stop leaves no process.
func TestRegistriesServeTheImagesAndAuthenticate(t *testing.T) {
	if _, err := os.Stat(RegistryBinary); err != nil {
		testenv.Missing(t, "docker-registry", "run scripts/install-deps.sh")
	}
	if _, err := os.Stat(BusyboxBinary); err != nil {
		testenv.Missing(t, "busybox-static", "run scripts/install-deps.sh")
	}
	ports, err := freePorts(2)
	require.NoError(t, err)
	home := t.TempDir()
	s := &Stack{Home: home, Certs: Certs{Dir: filepath.Join(home, "certs")}}
	rs := s.AddRegistries(RegistryPorts{Plain: ports[0], TLS: ports[1]}, false)
	require.NoError(t, s.PrepareFiles())
	t.Cleanup(func() { _ = s.Stop(t.Context()) })
	require.NoError(t, s.startRegistries(t.Context(), t.Logf))

	info, err := os.Stat(RegistryPasswordFile(home))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	password, err := rs.Auth.Password()
	require.NoError(t, err)
	require.Len(t, password, 48)

	web := rs.Plain.Images[images.WebRepository+":v1"]
	require.True(t, strings.HasPrefix(web, "sha256:"), "pushed digests: %v", rs.Plain.Images)
	require.Equal(t, web, rs.Auth.Images[images.WebRepository+":v1"], "both registries hold the same build")

	get := func(r *Registry, path, user, pass string) (int, string) {
		t.Helper()
		c, err := r.HTTPClient()
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, r.URL()+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, manifest := get(rs.Plain, "/v2/drover/web/manifests/v1", "", "")
	require.Equal(t, http.StatusOK, code, manifest)
	code, _ = get(rs.Auth, "/v2/drover/web/manifests/v1", "", "")
	require.Equal(t, http.StatusUnauthorized, code, "no credentials")
	code, _ = get(rs.Auth, "/v2/drover/web/manifests/v1", RegistryUser, "wrong")
	require.Equal(t, http.StatusUnauthorized, code, "wrong password")
	code, _ = get(rs.Auth, "/v2/drover/web/manifests/v1", RegistryUser, password)
	require.Equal(t, http.StatusOK, code)

	img, err := images.Web("v1", images.Options{})
	require.NoError(t, err)
	layers, err := img.Layers()
	require.NoError(t, err)
	d, err := layers[0].Digest()
	require.NoError(t, err)
	before, err := rs.Plain.BlobFetches(images.WebRepository)
	require.NoError(t, err)
	code, _ = get(rs.Plain, "/v2/drover/web/blobs/"+d.String(), "", "")
	require.Equal(t, http.StatusOK, code)
	require.Eventually(t, func() bool {
		after, err := rs.Plain.BlobFetches(images.WebRepository)
		return err == nil && after[d.String()] == before[d.String()]+1
	}, ComponentStartTimeout, pollInterval, "the access log shows the blob GET")

	pids := []int{rs.Plain.Pid(), rs.Auth.Pid()}
	require.NoError(t, s.Stop(t.Context()))
	for _, pid := range pids {
		require.NoFileExists(t, filepath.Join("/proc", strconv.Itoa(pid), "cmdline"), "registry pid %d still runs", pid)
	}
}

// A stack's cells pull docker:///REPO from its plain registry, reach only that one over
// plain HTTP and trust the dev CA for the TLS one; without registries they keep the
// rep's defaults.
func TestCellsGetTheRegistries(t *testing.T) {
	home := t.TempDir()
	s := &Stack{Home: home, Certs: Certs{Dir: filepath.Join(home, "certs")}}
	bare := s.newRep(devCellLayout(1, DefaultRepPort), "127.0.0.1:1", false)
	require.Empty(t, bare.Config.Executor.InsecureRegistries)
	require.Empty(t, bare.Config.Executor.RegistryCAFile)

	rs := s.AddRegistries(RegistryPorts{Plain: 15080, TLS: 15443}, false)
	r := s.newRep(devCellLayout(1, DefaultRepPort), "127.0.0.1:1", false)
	require.Equal(t, "127.0.0.1:15080", rs.Plain.Host())
	require.Equal(t, rs.Plain.Host(), r.Config.Executor.DefaultRegistry)
	require.Equal(t, []string{rs.Plain.Host()}, r.Config.Executor.InsecureRegistries)
	require.Equal(t, s.Certs.CAFile(), r.Config.Executor.RegistryCAFile)
	require.False(t, rs.Plain.TLS())
	require.True(t, rs.Auth.TLS())
	require.Equal(t, "docker://127.0.0.1:15443/drover/web#v1", rs.Auth.DockerURL("drover/web", "v1"))
	require.Equal(t, filepath.Join(home, "registry", "auth", "password"), rs.Auth.PasswordFile)
}

// BlobFetches counts successful GETs of a repository's blobs only: not HEADs, not
// failures, not manifests, not other repositories.
func TestBlobFetchesCountsSuccessfulBlobGETs(t *testing.T) {
	d1 := "sha256:" + strings.Repeat("a", 64)
	d2 := "sha256:" + strings.Repeat("b", 64)
	lines := []string{
		`127.0.0.1 - - [25/Nov/2026:20:46:12 +0000] "GET /v2/drover/web/blobs/` + d1 + ` HTTP/1.1" 200 1147972 "" "containerd/1.6.20"`,
		`127.0.0.1 - - [25/Nov/2026:20:46:12 +0000] "GET /v2/drover/web/blobs/` + d1 + ` HTTP/1.1" 206 100 "" "containerd/1.6.20"`,
		`127.0.0.1 - - [25/Nov/2026:20:46:12 +0000] "HEAD /v2/drover/web/blobs/` + d2 + ` HTTP/1.1" 200 0 "" "go-containerregistry"`,
		`127.0.0.1 - - [25/Nov/2026:20:46:12 +0000] "GET /v2/drover/web/blobs/` + d2 + ` HTTP/1.1" 404 157 "" "containerd/1.6.20"`,
		`127.0.0.1 - - [25/Nov/2026:20:46:12 +0000] "GET /v2/drover/web/manifests/v1 HTTP/1.1" 200 700 "" "containerd/1.6.20"`,
		`127.0.0.1 - - [25/Nov/2026:20:46:12 +0000] "GET /v2/drover/web2/blobs/` + d2 + ` HTTP/1.1" 200 10 "" "containerd/1.6.20"`,
		`not a log line`,
	}
	r := &Registry{}
	r.Dir = t.TempDir()
	got, err := r.BlobFetches("drover/web")
	require.NoError(t, err)
	require.Empty(t, got, "no access log yet")
	require.NoError(t, os.WriteFile(r.AccessLogPath(), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	got, err = r.BlobFetches("drover/web")
	require.NoError(t, err)
	require.Equal(t, map[string]int{d1: 2}, got)
}
