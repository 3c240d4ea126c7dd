package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/oci"
	"github.com/containerd/containerd/remotes/docker"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
)

func TestClassifyPullError(t *testing.T) {
	const image, registry = "127.0.0.1:5000/drover/web:v1", "127.0.0.1:5000"
	for _, tc := range []struct {
		name   string
		err    error
		reason string
	}{
		{"missing credentials", fmt.Errorf("failed to resolve reference %q: pull access denied, repository does not exist or may require authorization: %w",
			image, fmt.Errorf("%w: no basic auth credentials", docker.ErrInvalidAuthorization)), "unauthorized"},
		{"wrong credentials", errors.New(`failed to resolve reference "x": unexpected status from HEAD request to http://127.0.0.1:5000/v2/drover/web/manifests/v1: 401 Unauthorized`), "unauthorized"},
		{"forbidden", errors.New(`unexpected status from GET request to http://h/v2/x/blobs/sha256:aa: 403 Forbidden`), "unauthorized"},
		{"not found", fmt.Errorf("failed to resolve reference %q: %s: %w", image, image, errdefs.ErrNotFound), "not found (manifest unknown)"},
		{"manifest unknown", errors.New("MANIFEST_UNKNOWN: manifest unknown"), "not found (manifest unknown)"},
		{"refused", errors.New(`failed to do request: Head "http://127.0.0.1:5000/v2/": dial tcp 127.0.0.1:5000: connect: connection refused`), "connection refused"},
		{"plain http", errors.New(`Head "https://127.0.0.1:5000/v2/x/manifests/v1": http: server gave HTTP response to HTTPS client`),
			"the registry answers plain HTTP but 127.0.0.1:5000 is not listed in insecure_registries"},
		{"unknown host", errors.New("dial tcp: lookup nowhere.invalid: no such host"), "unknown registry host"},
		{"tls", errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority"), "TLS failure (is the registry's CA in registry_ca_file?)"},
		{"timeout", fmt.Errorf("fetch: %w", context.DeadlineExceeded), "timed out"},
		{"cancelled", fmt.Errorf("fetch: %w", context.Canceled), "cancelled"},
		{"other", errors.New("something odd"), "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := classifyPullError(image, registry, tc.err)
			require.Equal(t, tc.reason, pe.Reason)
			require.True(t, strings.HasPrefix(pe.Error(), "pull image "+image+" from registry "+registry+": "+tc.reason), pe.Error())
		})
	}
}

func TestPullErrorIsBounded(t *testing.T) {
	long := strings.Repeat("é", 2000) + " connection refused"
	pe := classifyPullError("r/x:v1", "r", errors.New(long))
	require.LessOrEqual(t, len(pe.Detail), maxPullDetail+3)
	require.True(t, utf8.ValidString(pe.Detail))
	require.True(t, strings.HasSuffix(pe.Detail, "..."))
	require.Equal(t, "connection refused", pe.Reason, "the detail is cut, the reason reads the whole answer")
	pe = classifyPullError("r/x:v1", "r", errors.New("multi\nline\n\tanswer"))
	require.Equal(t, "multi line answer", pe.Detail)
}

func TestCredsKeyHidesCredentials(t *testing.T) {
	require.Empty(t, registryCreds{}.key())
	k := registryCreds{Username: "u", Password: "secret"}.key()
	require.NotContains(t, k, "secret")
	require.NotEqual(t, k, registryCreds{Username: "u", Password: "other"}.key())
	require.NotEqual(t, registryCreds{Username: "ab", Password: "c"}.key(), registryCreds{Username: "a", Password: "bc"}.key())
}

func TestPinnedName(t *testing.T) {
	d := digest.FromString("x")
	for in, want := range map[string]string{
		"127.0.0.1:5000/drover/web:v1":                   "127.0.0.1:5000/drover/web@" + d.String(),
		"docker.io/library/busybox:latest":               "docker.io/library/busybox@" + d.String(),
		"r.local/app@" + digest.FromString("y").String(): "r.local/app@" + d.String(),
	} {
		got, err := pinnedName(in, d)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := pinnedName("r.local/app:v1", "sha256:short")
	require.Error(t, err)
}

func TestParseImageConfig(t *testing.T) {
	m, err := parseImageConfig([]byte(`{"architecture":"amd64","os":"linux","config":{
		"User":"app:staff","WorkingDir":"/srv","Env":["PATH=/bin","A=1"],
		"Entrypoint":["/bin/web"],"Cmd":["--port","8080"],"ExposedPorts":{"9090/tcp":{},"8080/tcp":{}}}}`))
	require.NoError(t, err)
	require.Equal(t, imageMeta{User: "app:staff", WorkingDir: "/srv", Env: []string{"PATH=/bin", "A=1"},
		Entrypoint: []string{"/bin/web"}, Cmd: []string{"--port", "8080"}, ExposedPorts: []string{"8080/tcp", "9090/tcp"}}, m)

	m, err = parseImageConfig([]byte(`{"config":{}}`))
	require.NoError(t, err)
	require.Equal(t, []string{defaultPathEnv}, m.Env, "an image without env gets the default PATH")

	_, err = parseImageConfig([]byte(`not json`))
	require.Error(t, err)
}

func TestWithImageEnv(t *testing.T) {
	s := &oci.Spec{Process: &specs.Process{Env: []string{"PATH=/default", "TERM=xterm"}}}
	require.NoError(t, withImageEnv([]string{"PATH=/image", "A=1"})(context.Background(), nil, nil, s))
	require.NoError(t, oci.WithEnv([]string{"A=2", "B=3"})(context.Background(), nil, nil, s))
	require.Equal(t, []string{"PATH=/image", "TERM=xterm", "A=2", "B=3"}, s.Process.Env,
		"image env over the defaults, the container env over the image's")
	require.Error(t, withImageEnv(nil)(context.Background(), nil, nil, &oci.Spec{}))
}

func TestProcessDefaults(t *testing.T) {
	img := imageMeta{User: "app", WorkingDir: "/srv"}
	u, d := processDefaults("", "", img)
	require.Equal(t, []string{"app", "/srv"}, []string{u, d})
	u, d = processDefaults("vcap", "/tmp", img)
	require.Equal(t, []string{"vcap", "/tmp"}, []string{u, d})
	u, d = processDefaults("", "", imageMeta{})
	require.Equal(t, []string{"", ""}, []string{u, d}, "root in / as before")
}

func TestRegistryConfigValidation(t *testing.T) {
	base := Config{Socket: "/s", Namespace: "n", StateDir: "/state"}
	require.NoError(t, base.withDefaults().Validate())
	good := base
	good.Registry = RegistryConfig{Default: "127.0.0.1:5000", Insecure: []string{"127.0.0.1:5000", "registry.local", "[::1]:5000"},
		CAFile: "/etc/ca.pem", GCGrace: 0, PullTimeout: time.Minute}
	require.NoError(t, good.Validate())

	for _, tc := range []struct {
		field  string
		mutate func(*RegistryConfig)
	}{
		{"default_registry", func(c *RegistryConfig) { c.Default = "http://r.local" }},
		{"default_registry", func(c *RegistryConfig) { c.Default = "r.local/path" }},
		{"insecure_registries[1]", func(c *RegistryConfig) { c.Insecure = []string{"ok.local", "bad host"} }},
		{"insecure_registries", func(c *RegistryConfig) { c.Insecure = make([]string, MaxInsecureRegistries+1) }},
		{"registry_ca_file", func(c *RegistryConfig) { c.CAFile = "ca.pem" }},
		{"image_gc_grace", func(c *RegistryConfig) { c.GCGrace = -time.Second }},
		{"image_pull_timeout", func(c *RegistryConfig) { c.PullTimeout = -time.Second }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := good
			c.Registry.Insecure = append([]string(nil), good.Registry.Insecure...)
			tc.mutate(&c.Registry)
			require.ErrorContains(t, c.Validate(), tc.field)
		})
	}
}

func TestNewRegistryClientCAFile(t *testing.T) {
	dir := t.TempDir()
	_, err := newRegistryClient(RegistryConfig{CAFile: filepath.Join(dir, "missing.pem")})
	require.ErrorContains(t, err, "registry_ca_file")
	bad := filepath.Join(dir, "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a certificate"), 0o600))
	_, err = newRegistryClient(RegistryConfig{CAFile: bad})
	require.ErrorContains(t, err, "no PEM certificate")
	c, err := newRegistryClient(RegistryConfig{Insecure: []string{"127.0.0.1:5000"}})
	require.NoError(t, err)
	plain, _ := c.plainHTTP("127.0.0.1:5000")
	require.True(t, plain)
	plain, _ = c.plainHTTP("127.0.0.1:5001")
	require.False(t, plain, "only listed registries are plain HTTP, not every loopback one")
	plain, _ = c.plainHTTP("localhost:5000")
	require.False(t, plain)
}

// FuzzParseImageConfig: an image config comes from a registry (outside input): parsing
// never panics, and a parsed config always has an env.
func FuzzParseImageConfig(f *testing.F) {
	f.Add([]byte(`{"config":{"User":"app","WorkingDir":"/srv","Env":["A=1"],"ExposedPorts":{"80/tcp":{}}}}`))
	f.Add([]byte(`{"config":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseImageConfig(raw)
		if err == nil && len(m.Env) == 0 {
			t.Fatalf("no env for %q", raw)
		}
	})
}
