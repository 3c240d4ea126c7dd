package containerd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/remotes"
	"github.com/containerd/containerd/remotes/docker"
)

// Registry credentials: the DesiredLRP's or Task's image_username and image_password.
// They go only into the authorizer of the one pull they were given for: never into a
// log line, an error, a label or a file.
type registryCreds struct {
	Username, Password string
}

// registryClient makes resolvers for pulls: HTTPS with the system roots plus the
// configured CA, plain HTTP only for the configured insecure registries.
type registryClient struct {
	http     *http.Client
	insecure []string
}

// newRegistryClient builds the HTTP client shared by every pull.
func newRegistryClient(cfg RegistryConfig) (*registryClient, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("registry_ca_file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry_ca_file: %s holds no PEM certificate", cfg.CAFile)
		}
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   10,
		ForceAttemptHTTP2:     true,
	}
	return &registryClient{
		http:     &http.Client{Transport: transport},
		insecure: slices.Clone(cfg.Insecure),
	}, nil
}

// resolver is a resolver for one pull with creds (none when empty), sent to whatever
// host the registry's authentication challenge names.
func (c *registryClient) resolver(creds registryCreds) remotes.Resolver {
	authOpts := []docker.AuthorizerOpt{docker.WithAuthClient(c.http)}
	if creds.Username != "" || creds.Password != "" {
		authOpts = append(authOpts, docker.WithAuthCreds(func(string) (string, string, error) {
			return creds.Username, creds.Password, nil
		}))
	}
	return docker.NewResolver(docker.ResolverOptions{
		Hosts: docker.ConfigureDefaultRegistries(
			docker.WithClient(c.http),
			docker.WithAuthorizer(docker.NewDockerAuthorizer(authOpts...)),
			docker.WithPlainHTTP(c.plainHTTP),
		),
	})
}

// plainHTTP reports whether host is listed as insecure.
func (c *registryClient) plainHTTP(host string) (bool, error) {
	return slices.Contains(c.insecure, host), nil
}

// Close drops idle connections.
func (c *registryClient) Close() { c.http.CloseIdleConnections() }

// maxPullDetail bounds the registry's answer quoted in a pull failure.
const maxPullDetail = 300

// PullError is a failed pull: the image, the registry and what went wrong, in words an
// app developer can act on. Its message is bounded and never holds credentials.
type PullError struct {
	Image    string
	Registry string
	// Reason is the short cause: "unauthorized", "not found", "connection refused", ...
	Reason string
	// Detail is the registry's or the network's answer, cut to maxPullDetail bytes.
	Detail string
}

func (e *PullError) Error() string {
	msg := fmt.Sprintf("pull image %s from registry %s: %s", e.Image, e.Registry, e.Reason)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

// classifyPullError turns a containerd pull error into a PullError.
func classifyPullError(image, registry string, err error) *PullError {
	msg := err.Error()
	low := strings.ToLower(msg)
	pe := &PullError{Image: image, Registry: registry, Detail: cutDetail(msg)}
	switch {
	case strings.Contains(low, "server gave http response to https client"):
		pe.Reason = "the registry answers plain HTTP but " + registry + " is not listed in insecure_registries"
	case errors.Is(err, docker.ErrInvalidAuthorization), strings.Contains(low, "401 unauthorized"),
		strings.Contains(low, "403 forbidden"), strings.Contains(low, "unauthorized"):
		pe.Reason = "unauthorized"
	case errdefs.IsNotFound(err), strings.Contains(low, "404 not found"), strings.Contains(low, "manifest unknown"):
		pe.Reason = "not found (manifest unknown)"
	case strings.Contains(low, "connection refused"):
		pe.Reason = "connection refused"
	case strings.Contains(low, "no such host"):
		pe.Reason = "unknown registry host"
	case strings.Contains(low, "x509:") || strings.Contains(low, "tls:") || strings.Contains(low, "certificate"):
		pe.Reason = "TLS failure (is the registry's CA in registry_ca_file?)"
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(low, "timeout") || strings.Contains(low, "deadline exceeded"):
		pe.Reason = "timed out"
	case errors.Is(err, context.Canceled):
		pe.Reason = "cancelled"
	default:
		pe.Reason = "failed"
	}
	return pe
}

// cutDetail bounds an error text for a crash reason, on a rune boundary.
func cutDetail(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxPullDetail {
		return s
	}
	cut := maxPullDetail
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
