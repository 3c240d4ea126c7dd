package devstack

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"golang.org/x/crypto/bcrypt"

	"drover.dev/devstack/images"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
)

// RegistryBinary is the program of Debian's docker-registry package (the CNCF
// distribution registry), which scripts/install-deps.sh installs.
const RegistryBinary = "/usr/bin/docker-registry"

// RegistryUser is the user of the authenticated registry's basic auth.
const RegistryUser = "drover"

// RegistryCommonName is the common name of the TLS registry's certificate.
const RegistryCommonName = "registry"

// RegistryPorts are the ports of a stack's two registries.
type RegistryPorts struct{ Plain, TLS int }

// DefaultRegistryPorts are the dev stack's registry ports (not 5000, where the system
// service that Debian's docker-registry package installs listens).
var DefaultRegistryPorts = RegistryPorts{Plain: 5080, TLS: 5443}

// Registries are a stack's private OCI registries, both on 127.0.0.1 with their files
// under Home/registry: Plain speaks HTTP without authentication (the cells' default
// registry, listed as insecure), Auth speaks HTTPS with the dev CA's certificate and
// requires htpasswd basic auth (RegistryUser and a generated password, kept mode 0600).
// Each access-logs every request to its stdout.log, so tests can count blob fetches.
type Registries struct {
	Plain *Registry `json:"plain"`
	Auth  *Registry `json:"auth"`
}

// All lists both registries.
func (rs *Registries) All() []*Registry { return []*Registry{rs.Plain, rs.Auth} }

// Registry is one docker-registry process: a Service whose configuration (JSON, which
// the registry reads as YAML) is config.json, whose stdout.log is the access log and
// whose stderr.log is the registry's own log.
type Registry struct {
	Service
	Config RegistryConfig `json:"config"`
	// Username and PasswordFile are the basic auth credentials; empty for a registry
	// without authentication.
	Username     string `json:"username,omitempty"`
	PasswordFile string `json:"password_file,omitempty"`
	// CAFile is the CA that signed the registry's certificate; empty without TLS.
	CAFile string `json:"ca_file,omitempty"`
	// Images maps repository:tag to the manifest digest pushed at the last start.
	Images map[string]string `json:"images,omitempty"`

	// reserved holds the listener of the registry's port until the moment it starts
	// (docker-registry cannot take a passed listener, so it is closed just before).
	reserved []io.Closer
}

// RegistryConfig is the part of docker-registry's configuration drover sets.
type RegistryConfig struct {
	Version string          `json:"version"`
	Log     registryLog     `json:"log"`
	Storage registryStorage `json:"storage"`
	HTTP    registryHTTP    `json:"http"`
	Auth    *registryAuth   `json:"auth,omitempty"`
}

type registryLog struct {
	Level     string            `json:"level"`
	Formatter string            `json:"formatter"`
	AccessLog registryAccessLog `json:"accesslog"`
	Fields    map[string]string `json:"fields,omitempty"`
}

type registryAccessLog struct {
	Disabled bool `json:"disabled"`
}

type registryStorage struct {
	Filesystem  registryFilesystem  `json:"filesystem"`
	Delete      registryEnabled     `json:"delete"`
	Maintenance registryMaintenance `json:"maintenance"`
}

type registryFilesystem struct {
	RootDirectory string `json:"rootdirectory"`
}

type registryEnabled struct {
	Enabled bool `json:"enabled"`
}

type registryMaintenance struct {
	UploadPurging registryEnabled `json:"uploadpurging"`
}

type registryHTTP struct {
	Addr    string              `json:"addr"`
	Secret  string              `json:"secret"`
	TLS     *registryTLS        `json:"tls,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
}

type registryTLS struct {
	Certificate string `json:"certificate"`
	Key         string `json:"key"`
}

type registryAuth struct {
	Htpasswd registryHtpasswd `json:"htpasswd"`
}

type registryHtpasswd struct {
	Realm string `json:"realm"`
	Path  string `json:"path"`
}

// RegistryPasswordFile is where the authenticated registry's password is kept under home.
func RegistryPasswordFile(home string) string {
	return filepath.Join(home, "registry", "auth", "password")
}

// AddRegistries describes the stack's two registries on ports, living in
// Home/registry/plain and Home/registry/auth.
func (s *Stack) AddRegistries(ports RegistryPorts, detached bool) *Registries {
	rs := &Registries{
		Plain: s.newRegistry("registry", "plain", ports.Plain, detached),
		Auth:  s.newRegistry("registry-auth", "auth", ports.TLS, detached),
	}
	a := rs.Auth
	a.Username = RegistryUser
	a.PasswordFile = RegistryPasswordFile(s.Home)
	a.CAFile = s.Certs.CAFile()
	pair := s.Certs.Registry()
	a.Config.HTTP.TLS = &registryTLS{Certificate: pair.CertFile, Key: pair.KeyFile}
	a.Config.Auth = &registryAuth{Htpasswd: registryHtpasswd{Realm: "drover", Path: filepath.Join(a.Dir, "htpasswd")}}
	s.Registry = rs
	return rs
}

func (s *Stack) newRegistry(name, kind string, port int, detached bool) *Registry {
	r := &Registry{}
	r.Name = name
	r.Dir = filepath.Join(s.Home, "registry", kind)
	r.Binary = RegistryBinary
	r.Detached = detached
	r.ConfigArgs = []string{"serve"}
	r.Config = RegistryConfig{
		Version: "0.1",
		Log:     registryLog{Level: "warn", Formatter: "json", Fields: map[string]string{"service": name}},
		Storage: registryStorage{
			Filesystem: registryFilesystem{RootDirectory: filepath.Join(r.Dir, "storage")},
			Delete:     registryEnabled{Enabled: true},
		},
		HTTP: registryHTTP{
			Addr:    "127.0.0.1:" + strconv.Itoa(port),
			Headers: map[string][]string{"X-Content-Type-Options": {"nosniff"}},
		},
	}
	return r
}

// ReleaseBeforeStart gives the registry the reservations of its port, which Start closes
// just before the registry binds it.
func (r *Registry) ReleaseBeforeStart(reserved ...io.Closer) { r.reserved = reserved }

// Host is host:port of the registry, as image references name it.
func (r *Registry) Host() string { return r.Config.HTTP.Addr }

// TLS reports whether the registry speaks HTTPS.
func (r *Registry) TLS() bool { return r.Config.HTTP.TLS != nil }

// URL is the registry's base URL.
func (r *Registry) URL() string {
	if r.TLS() {
		return "https://" + r.Host()
	}
	return "http://" + r.Host()
}

// DockerURL is the docker rootfs URL of repository#tag on this registry
// (docker://HOST/REPOSITORY#TAG).
func (r *Registry) DockerURL(repository, tag string) string {
	return "docker://" + r.Host() + "/" + repository + "#" + tag
}

// Password reads the basic auth password ("" for a registry without authentication).
func (r *Registry) Password() (string, error) {
	if r.PasswordFile == "" {
		return "", nil
	}
	return libconfig.ReadSecretFile(r.PasswordFile)
}

// Target is where images.Push writes into this registry, with its credentials.
func (r *Registry) Target() (images.Target, error) {
	password, err := r.Password()
	if err != nil {
		return images.Target{}, err
	}
	return images.Target{Host: r.Host(), PlainHTTP: !r.TLS(), CAFile: r.CAFile, Username: r.Username, Password: password}, nil
}

// AccessLogPath is the registry's access log (one line per request, combined format).
func (r *Registry) AccessLogPath() string { return r.StdoutPath() }

// prepare writes the registry's password (kept once made) and its htpasswd file.
func (r *Registry) prepare() error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	if r.Config.HTTP.Secret == "" {
		secret, err := randomHex(32)
		if err != nil {
			return err
		}
		r.Config.HTTP.Secret = secret
	}
	if r.PasswordFile == "" {
		return nil
	}
	password, err := ensureSecretFile(r.PasswordFile)
	if err != nil {
		return fmt.Errorf("%s password: %w", r.Name, err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("%s htpasswd: %w", r.Name, err)
	}
	line := r.Username + ":" + string(hash) + "\n"
	if err := os.WriteFile(r.Config.Auth.Htpasswd.Path, []byte(line), 0o600); err != nil {
		return fmt.Errorf("%s htpasswd: %w", r.Name, err)
	}
	return nil
}

// Start writes the configuration, starts the registry and waits until it is Healthy.
func (r *Registry) Start(ctx context.Context) error {
	for _, c := range r.reserved {
		_ = c.Close()
	}
	r.reserved = nil
	return r.start(ctx, r.Config, ComponentStartTimeout, r.Healthy)
}

// Healthy reports whether GET /v2/ answers 200 (with the credentials, if any).
func (r *Registry) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, healthAttemptTimeout)
	defer cancel()
	client, err := r.HTTPClient()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL()+"/v2/", nil)
	if err != nil {
		return err
	}
	if r.Username != "" {
		password, err := r.Password()
		if err != nil {
			return err
		}
		req.SetBasicAuth(r.Username, password)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/v2/: %s", r.URL(), resp.Status)
	}
	return nil
}

// HTTPClient is an HTTP client that trusts the registry's CA.
func (r *Registry) HTTPClient() (*http.Client, error) {
	if !r.TLS() {
		return &http.Client{Timeout: 30 * time.Second}, nil
	}
	pem, err := os.ReadFile(r.CAFile)
	if err != nil {
		return nil, fmt.Errorf("%s CA: %w", r.Name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s CA: %s holds no PEM certificate", r.Name, r.CAFile)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}, nil
}

// PushImages pushes imgs into the registry and records their digests in Images.
func (r *Registry) PushImages(ctx context.Context, imgs []images.Named) (map[string]string, error) {
	target, err := r.Target()
	if err != nil {
		return nil, err
	}
	digests, err := images.PushAll(ctx, target, imgs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name, err)
	}
	if r.Images == nil {
		r.Images = map[string]string{}
	}
	for k, v := range digests {
		r.Images[k] = v
	}
	return digests, nil
}

// blobGet matches an access log line of a successful blob GET: the repository and digest.
var blobGet = regexp.MustCompile(`"GET /v2/([^ ]+)/blobs/(sha256:[0-9a-f]{64}) HTTP/[0-9.]+" (200|206) `)

// BlobFetches counts, from the access log, the successful GETs of each blob of
// repository (by digest).
func (r *Registry) BlobFetches(repository string) (map[string]int, error) {
	f, err := os.Open(r.AccessLogPath())
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := blobGet.FindStringSubmatch(sc.Text())
		if m != nil && m[1] == repository {
			out[m[2]]++
		}
	}
	return out, sc.Err()
}

// startRegistries starts the stack's registries and pushes the standard images
// (images.Standard) into both.
func (s *Stack) startRegistries(ctx context.Context, logf func(string, ...any)) error {
	if s.Registry == nil {
		return nil
	}
	imgs, err := images.Standard(images.Options{BusyboxPath: BusyboxBinary})
	if err != nil {
		return fmt.Errorf("build images: %w", err)
	}
	for _, r := range s.Registry.All() {
		logf("starting %s (%s, files in %s)", r.Name, r.URL(), r.Dir)
		if err := r.Start(ctx); err != nil {
			return err
		}
		digests, err := r.PushImages(ctx, imgs)
		if err != nil {
			return err
		}
		for _, ref := range images.SortedRefs(digests) {
			logf("pushed %s/%s (%s)", r.Host(), ref, digests[ref])
		}
	}
	return nil
}

// ensureSecretFile returns the secret in path, writing a random one (48 hex digits,
// mode 0600) first when there is none.
func ensureSecretFile(path string) (string, error) {
	if secret, err := libconfig.ReadSecretFile(path); err == nil && secret != "" {
		return secret, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	secret, err := randomHex(24)
	if err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(secret+"\n"), 0o600); err != nil {
		return "", err
	}
	return secret, os.Rename(tmp, path)
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// EnsureRegistry writes the TLS registry's certificate (for 127.0.0.1 and localhost).
func (c Certs) EnsureRegistry() error {
	ca, err := devcerts.LoadOrCreateCA(c.Dir)
	if err != nil {
		return err
	}
	return devcerts.EnsureCert(ca, c.Dir, "registry", RegistryCommonName, c.hostsFor("registry", componentHosts))
}

// Registry is the TLS registry's certificate and key.
func (c Certs) Registry() tlsconfig.Files { return c.pair("registry") }
