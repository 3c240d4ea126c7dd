package push

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"drover.dev/lib/dockerref"
)

// MaxImageConfigBytes bounds the image config a push reads.
const MaxImageConfigBytes = 4 << 20

// RegistryClient reads images from OCI/Docker registries over the distribution API
// (github.com/google/go-containerregistry): the digest a reference resolves to and the
// config of the image for Platform. It talks TLS only, unless Insecure allows plain
// HTTP; go-containerregistry's own habit of trying plain HTTP for loopback and private
// addresses is switched off, so that plain HTTP is always the user's choice.
type RegistryClient struct {
	// Insecure allows plain HTTP to the registry. HTTPS certificates are always
	// verified (against RootCAs).
	Insecure bool
	// RootCAs verifies registries' certificates; nil means the system's.
	RootCAs *x509.CertPool
	// Platform picks the image of a multi-platform index; zero means linux/GOARCH.
	Platform v1.Platform
	// Timeout bounds each HTTP request; zero means 30 s.
	Timeout time.Duration
}

// Image resolves ref (which must name its registry) and reads its config, logging in
// with creds when they are set. Errors name the image and carry the registry's
// answer (UNAUTHORIZED, MANIFEST_UNKNOWN, connection refused); never a credential.
func (c RegistryClient) Image(ctx context.Context, ref dockerref.Ref, creds Credentials) (Image, error) {
	if ref.Registry == "" {
		return Image{}, fmt.Errorf("image %s names no registry", ref)
	}
	var opts []name.Option
	if c.Insecure {
		opts = append(opts, name.Insecure)
	}
	full := ref.WithDefaultRegistry("")
	if ref.Digest != "" {
		full = ref.Registry + "/" + ref.Repository + "@" + ref.Digest
	}
	nref, err := name.ParseReference(full, opts...)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", ref, err)
	}
	auth := authn.Anonymous
	if creds.Username != "" {
		auth = authn.FromConfig(authn.AuthConfig{Username: creds.Username, Password: creds.Password})
	}
	platform := c.Platform
	if platform.OS == "" {
		platform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	}
	ropts := []remote.Option{
		remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(c.transport()),
		remote.WithPlatform(platform), remote.WithUserAgent("droverctl"),
	}
	desc, err := remote.Get(nref, ropts...)
	if err != nil {
		return Image{}, c.imageError(ref, err)
	}
	img, err := desc.Image()
	if err != nil {
		return Image{}, c.imageError(ref, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return Image{}, c.imageError(ref, err)
	}
	if manifest.Config.Size > MaxImageConfigBytes {
		return Image{}, fmt.Errorf("image %s: its config is %d bytes, more than %d", ref, manifest.Config.Size, MaxImageConfigBytes)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Image{}, c.imageError(ref, err)
	}
	out := Image{
		Digest:     desc.Digest.String(),
		Entrypoint: cfg.Config.Entrypoint,
		Cmd:        cfg.Config.Cmd,
		User:       cfg.Config.User,
		WorkingDir: cfg.Config.WorkingDir,
	}
	out.ExposedPorts = slices.Sorted(maps.Keys(cfg.Config.ExposedPorts))
	return out, nil
}

// imageError names the image and registry; a plain-HTTP refusal says how to allow it.
func (c RegistryClient) imageError(ref dockerref.Ref, err error) error {
	if errors.Is(err, errPlainHTTP) {
		return fmt.Errorf("reading image %s: registry %s answers only plain HTTP, which needs --insecure-registry: %w", ref, ref.Registry, err)
	}
	return fmt.Errorf("reading image %s from %s: %w", ref, ref.Registry, err)
}

// errPlainHTTP is the answer to a plain HTTP request without Insecure.
var errPlainHTTP = errors.New("plain HTTP to the registry is not allowed")

// transport is an HTTP transport with the client's CAs, timeout and HTTP policy.
func (c RegistryClient) transport() http.RoundTripper {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	base.ResponseHeaderTimeout = timeout
	return httpPolicy{next: base, insecure: c.Insecure}
}

// httpPolicy refuses plain HTTP requests unless insecure.
type httpPolicy struct {
	next     http.RoundTripper
	insecure bool
}

func (h httpPolicy) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" && !h.insecure {
		return nil, errPlainHTTP
	}
	return h.next.RoundTrip(r)
}
