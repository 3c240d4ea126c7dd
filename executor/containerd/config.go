package containerd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"drover.dev/executor"
	"drover.dev/executor/network"
	"drover.dev/lib/dockerref"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Config configures a Runtime.
type Config struct {
	// Socket is the containerd socket.
	Socket string
	// Namespace is the containerd namespace the runtime owns.
	Namespace string
	// StateDir keeps per-container state, process logs and (by default) network state.
	StateDir string
	// PreloadedRootFSes maps NAME of preloaded:NAME to an OCI image tarball or an OCI
	// image layout directory; each is imported once (by the digest of its index).
	PreloadedRootFSes map[string]string
	// ArbitrarySchemes are the rootfs URL schemes pulled from a registry (e.g. "docker").
	ArbitrarySchemes []string
	// Network configures container networking; its StateDir defaults to StateDir/network.
	Network network.Config
	// GracePeriod is how long Destroy waits after SIGTERM before SIGKILL (default 10s).
	GracePeriod time.Duration
	// DiskPollInterval is how often disk usage is measured (default 2s).
	DiskPollInterval time.Duration
	// BusyboxPath is the host's static busybox, bind-mounted into every container to run
	// its init (default /usr/bin/busybox).
	BusyboxPath string
	// Snapshotter is the containerd snapshotter (default overlayfs; the disk quota needs it).
	Snapshotter string
	// Registry configures pulls of docker:// rootfses.
	Registry RegistryConfig
	// DefaultEgressRules open every container's network (default deny) to these
	// destinations, e.g. DNS; a container's own rules take precedence over them.
	DefaultEgressRules []*modelsv1.EgressRule
	// UserNamespace, when set, runs every unprivileged container in a user namespace
	// mapping its ids 0..size-1 onto this host range (userns.go); nil runs them with the
	// host's ids, as privileged ones always are.
	UserNamespace *executor.UserNamespace
	// ObserveFirewallSetup, when set, is told how long each new container's egress rules
	// took to apply (the rep exports it as drover_rep_egress_rule_setup_seconds).
	ObserveFirewallSetup func(time.Duration)
}

// RegistryConfig is how the runtime reaches image registries.
type RegistryConfig struct {
	// Default is the registry host[:port] of docker:///REPO URLs (default docker.io).
	Default string
	// Insecure lists the host[:port] registries reached over plain HTTP; every other
	// registry is HTTPS.
	Insecure []string
	// CAFile is a PEM bundle trusted for registries besides the system roots.
	CAFile string
	// GCGrace is how long a pulled image is kept after its last container went; 0
	// removes it at once (the rep's default is DefaultImageGCGrace).
	GCGrace time.Duration
	// PullTimeout bounds one pull: resolve, fetch and unpack (default 5m).
	PullTimeout time.Duration
}

// Defaults used by withDefaults.
const (
	DefaultGracePeriod      = 10 * time.Second
	DefaultDiskPollInterval = 2 * time.Second
	DefaultBusyboxPath      = "/usr/bin/busybox"
	DefaultSnapshotter      = "overlayfs"
	DefaultRegistry         = "docker.io"
	DefaultImageGCGrace     = 10 * time.Minute
	DefaultImagePullTimeout = 5 * time.Minute
	// MaxInsecureRegistries bounds Registry.Insecure.
	MaxInsecureRegistries = 100
)

// withDefaults fills in the defaults of unset fields.
func (c Config) withDefaults() Config {
	if c.GracePeriod == 0 {
		c.GracePeriod = DefaultGracePeriod
	}
	if c.DiskPollInterval == 0 {
		c.DiskPollInterval = DefaultDiskPollInterval
	}
	if c.BusyboxPath == "" {
		c.BusyboxPath = DefaultBusyboxPath
	}
	if c.Snapshotter == "" {
		c.Snapshotter = DefaultSnapshotter
	}
	if c.Registry.Default == "" {
		c.Registry.Default = DefaultRegistry
	}
	if c.Registry.PullTimeout == 0 {
		c.Registry.PullTimeout = DefaultImagePullTimeout
	}
	if c.Network.StateDir == "" && c.StateDir != "" {
		c.Network.StateDir = filepath.Join(c.StateDir, "network")
	}
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Socket == "" {
		errs = append(errs, errors.New("socket: required"))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("namespace: required"))
	}
	if c.StateDir == "" || !filepath.IsAbs(c.StateDir) {
		errs = append(errs, fmt.Errorf("state_dir: must be an absolute path, got %q", c.StateDir))
	}
	for name, path := range c.PreloadedRootFSes {
		if name == "" || strings.ContainsAny(name, ":/ ") {
			errs = append(errs, fmt.Errorf("preloaded_rootfses: invalid name %q", name))
		}
		if !filepath.IsAbs(path) {
			errs = append(errs, fmt.Errorf("preloaded_rootfses[%s]: path must be absolute, got %q", name, path))
		}
	}
	for _, s := range c.ArbitrarySchemes {
		if s != "docker" {
			errs = append(errs, fmt.Errorf("arbitrary_schemes: unsupported scheme %q (only docker)", s))
		}
	}
	if c.GracePeriod < 0 {
		errs = append(errs, errors.New("grace_period: must not be negative"))
	}
	if c.DiskPollInterval < 0 {
		errs = append(errs, errors.New("disk_poll_interval: must not be negative"))
	}
	errs = append(errs, c.Registry.validate()...)
	if c.UserNamespace != nil {
		if err := c.UserNamespace.Validate("user_namespace"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validate checks the registry settings; field names are the rep config's.
func (c RegistryConfig) validate() []error {
	var errs []error
	if c.Default != "" && !validRegistryHost(c.Default) {
		errs = append(errs, fmt.Errorf("default_registry: must be HOST[:PORT], got %q", c.Default))
	}
	if len(c.Insecure) > MaxInsecureRegistries {
		errs = append(errs, fmt.Errorf("insecure_registries: at most %d entries, got %d", MaxInsecureRegistries, len(c.Insecure)))
	}
	for i, h := range c.Insecure {
		if !validRegistryHost(h) {
			errs = append(errs, fmt.Errorf("insecure_registries[%d]: must be HOST[:PORT], got %q", i, h))
		}
	}
	if c.CAFile != "" && !filepath.IsAbs(c.CAFile) {
		errs = append(errs, fmt.Errorf("registry_ca_file: must be an absolute path, got %q", c.CAFile))
	}
	if c.GCGrace < 0 {
		errs = append(errs, errors.New("image_gc_grace: must not be negative"))
	}
	if c.PullTimeout < 0 {
		errs = append(errs, errors.New("image_pull_timeout: must not be negative"))
	}
	return errs
}

// validRegistryHost reports whether s is a registry HOST[:PORT] (what a docker URL may
// name before its repository).
func validRegistryHost(s string) bool {
	if len(s) > 255 {
		return false
	}
	ref, err := dockerref.Parse("docker://" + s + "/x")
	return err == nil && ref.Registry == s
}
