// Package config is the rep's configuration: one JSON file, validated at start.
package config

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"drover.dev/executor"
	"drover.dev/executor/firewall"
	"drover.dev/lib/authz"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/dockerref"
	"drover.dev/lib/logging"
	"drover.dev/lib/tlsconfig"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Defaults.
const (
	DefaultListenAddress       = "127.0.0.1:1800"
	DefaultDebugAddress        = "127.0.0.1:1801"
	DefaultBBSAddress          = "127.0.0.1:8889"
	DefaultZone                = "z1"
	DefaultPresenceTTL         = 15 * time.Second
	DefaultPresenceInterval    = 5 * time.Second
	DefaultPollingInterval     = 30 * time.Second
	DefaultGracePeriod         = 10 * time.Second
	DefaultUnhealthyInterval   = 500 * time.Millisecond
	DefaultHealthyInterval     = 30 * time.Second
	DefaultReservedExpiration  = time.Minute
	DefaultContainerdNamespace = "drover"
	DefaultBackend             = "containerd"
	DefaultLogLevel            = "info"
	DefaultMaxCacheBytes       = 1 << 30
	DefaultLogLinesPerInstance = 1000
	DefaultReapInterval        = 15 * time.Second
	DefaultMetricsInterval     = 15 * time.Second
	DefaultDiskPollInterval    = 5 * time.Second
	// DefaultEvacuationTimeout bounds a drain: containers still there are deleted then.
	DefaultEvacuationTimeout = 10 * time.Minute
	// DefaultEvacuationPollingInterval is the bulk sync and evacuator period while draining.
	DefaultEvacuationPollingInterval = 10 * time.Second
	// DefaultRegistry is the registry of docker:///REPOSITORY URLs.
	DefaultRegistry = "docker.io"
	// DefaultImageGCGrace is how long a pulled image outlives its last container.
	DefaultImageGCGrace = 10 * time.Minute
	// DefaultImagePullTimeout bounds one image pull.
	DefaultImagePullTimeout = 5 * time.Minute
	// MaxInsecureRegistries bounds executor.insecure_registries.
	MaxInsecureRegistries = 100
)

// Config is the rep's configuration file.
type Config struct {
	// CellID names the cell; it is the presence key in the BBS.
	CellID string `json:"cell_id"`
	Zone   string `json:"zone"`
	// ListenAddress serves drover.rep.v1 over mTLS (and health, reflection).
	ListenAddress string `json:"listen_address"`
	// AdvertiseAddress is host:port the BBS and auctioneer dial (default ListenAddress).
	AdvertiseAddress string `json:"advertise_address,omitempty"`
	DebugAddress     string `json:"debug_address"`
	// DebugAdminAddress is where pprof and /log-level are served: "" on debug_address
	// (which must then be loopback), "off", "unix:PATH" or a loopback host:port.
	DebugAdminAddress string `json:"debug_admin_address"`
	BBSAddress        string `json:"bbs_address"`
	// TLS is the rep's certificate for its server and as a client of the BBS.
	TLS tlsconfig.Files `json:"tls"`
	// IdentityCommonNames maps the common names of callers' certificates to their roles
	// (operator, bbs, auctioneer, converger, route-emitter); when set it replaces the
	// default (the dev stack's names, authz.DefaultCommonNames). Callers whose
	// certificate has no role are refused (docs/architecture.md "Authorisation").
	IdentityCommonNames map[string]string `json:"identity_common_names,omitempty"`

	// Capacity advertised and accounted by the executor.
	MemoryMB   int `json:"memory_mb"`
	DiskMB     int `json:"disk_mb"`
	Containers int `json:"containers"`

	PlacementTags         []string `json:"placement_tags,omitempty"`
	OptionalPlacementTags []string `json:"optional_placement_tags,omitempty"`
	// PreloadedRootFSes maps a name (preloaded:NAME) to an OCI image tarball or directory.
	PreloadedRootFSes map[string]string `json:"preloaded_rootfses"`
	// RootFSProviders are arbitrary schemes the cell accepts (e.g. "docker").
	RootFSProviders []string `json:"rootfs_providers,omitempty"`

	PresenceTTL      libconfig.Duration `json:"presence_ttl"`
	PresenceInterval libconfig.Duration `json:"presence_interval"`
	// PollingInterval is the period of the sync of containers with the BBS.
	PollingInterval libconfig.Duration `json:"polling_interval"`

	// EvacuateOnSigterm makes SIGTERM/SIGINT drain the cell (hand its instances over to
	// other cells, then exit 0) instead of stopping at once with containers left running.
	EvacuateOnSigterm bool `json:"evacuate_on_sigterm"`
	// EvacuationTimeout bounds a drain; what is left then is deleted.
	EvacuationTimeout libconfig.Duration `json:"evacuation_timeout"`
	// EvacuationPollingInterval replaces PollingInterval while the cell evacuates, and
	// is how often the evacuator checks whether containers are left.
	EvacuationPollingInterval libconfig.Duration `json:"evacuation_polling_interval"`

	Executor ExecutorConfig `json:"executor"`
	LogLevel string         `json:"log_level"`
}

// ExecutorConfig configures the in-process executor.
type ExecutorConfig struct {
	// Backend is "containerd" or "sim".
	Backend string `json:"backend"`
	// StateDir keeps the executor's files (container state, logs, download cache).
	StateDir            string `json:"state_dir"`
	ContainerdSocket    string `json:"containerd_socket"`
	ContainerdNamespace string `json:"containerd_namespace"`
	// ExternalIP is the cell's address: host ports are published there.
	ExternalIP string `json:"external_ip"`
	// PortRangeStart..PortRangeEnd are the host ports handed to containers.
	PortRangeStart int `json:"port_range_start"`
	PortRangeEnd   int `json:"port_range_end"`
	// Subnet is the CIDR of this cell's container bridge; BridgeName its interface.
	Subnet     string `json:"subnet"`
	BridgeName string `json:"bridge_name"`
	// CNIBinDir holds the CNI plugins (bridge, portmap, host-local, loopback).
	CNIBinDir           string             `json:"cni_bin_dir"`
	GracePeriod         libconfig.Duration `json:"grace_period"`
	UnhealthyInterval   libconfig.Duration `json:"unhealthy_interval"`
	HealthyInterval     libconfig.Duration `json:"healthy_interval"`
	ReservedExpiration  libconfig.Duration `json:"reserved_expiration"`
	MaxCacheBytes       int64              `json:"max_cache_bytes"`
	LogLinesPerInstance int                `json:"log_lines_per_instance"`
	// ReapInterval is how often the executor compares its containers with the backend's.
	ReapInterval libconfig.Duration `json:"reap_interval"`
	// MetricsInterval is how often container usage is sampled.
	MetricsInterval libconfig.Duration `json:"metrics_interval"`
	// DiskPollInterval is how often the containerd backend checks disk usage against disk_mb.
	DiskPollInterval libconfig.Duration `json:"disk_poll_interval"`
	// DefaultRegistry is the registry HOST[:PORT] of docker:///REPOSITORY URLs.
	DefaultRegistry string `json:"default_registry"`
	// InsecureRegistries are the HOST[:PORT] registries pulled from over plain HTTP;
	// every other registry is HTTPS.
	InsecureRegistries []string `json:"insecure_registries,omitempty"`
	// RegistryCAFile is a PEM bundle trusted for registries besides the system roots.
	RegistryCAFile string `json:"registry_ca_file,omitempty"`
	// ImageGCGrace is how long a pulled image is kept after its last container is
	// deleted (0 removes it at once); preloaded images are never removed.
	ImageGCGrace libconfig.Duration `json:"image_gc_grace"`
	// ImagePullTimeout bounds one pull (resolve, fetch, unpack).
	ImagePullTimeout libconfig.Duration `json:"image_pull_timeout"`
	// DefaultEgressRules open every container's network (default deny) on the
	// containerd backend, e.g. to DNS: the LRP API's egress rule JSON, validated by its
	// rules; a container's own rules take precedence over them.
	DefaultEgressRules []*modelsv1.EgressRule `json:"default_egress_rules,omitempty"`
	// UserNamespace, when set, runs every unprivileged container of the containerd
	// backend in a user namespace: container uids/gids 0..size-1 are host ids
	// host_uid/host_gid..+size-1, so root inside is an unprivileged host user.
	// Absent or null keeps the host's ids (privileged containers always keep them).
	UserNamespace *executor.UserNamespace `json:"user_namespace,omitempty"`
	// Sim configures the simulated backend.
	SimStartLatency libconfig.Duration `json:"sim_start_latency,omitempty"`
	SimFailureRate  float64            `json:"sim_failure_rate,omitempty"`
}

// Default returns a configuration with every default filled in.
func Default() Config {
	return Config{
		Zone:             DefaultZone,
		ListenAddress:    DefaultListenAddress,
		DebugAddress:     DefaultDebugAddress,
		BBSAddress:       DefaultBBSAddress,
		MemoryMB:         4096,
		DiskMB:           8192,
		Containers:       100,
		PresenceTTL:      libconfig.Duration(DefaultPresenceTTL),
		PresenceInterval: libconfig.Duration(DefaultPresenceInterval),
		PollingInterval:  libconfig.Duration(DefaultPollingInterval),
		RootFSProviders:  []string{"docker"},

		EvacuationTimeout:         libconfig.Duration(DefaultEvacuationTimeout),
		EvacuationPollingInterval: libconfig.Duration(DefaultEvacuationPollingInterval),
		Executor: ExecutorConfig{
			Backend:             DefaultBackend,
			ContainerdNamespace: DefaultContainerdNamespace,
			ExternalIP:          "127.0.0.1",
			PortRangeStart:      61000,
			PortRangeEnd:        61999,
			Subnet:              "10.88.1.0/24",
			BridgeName:          "drover0",
			CNIBinDir:           "/usr/lib/cni",
			GracePeriod:         libconfig.Duration(DefaultGracePeriod),
			UnhealthyInterval:   libconfig.Duration(DefaultUnhealthyInterval),
			HealthyInterval:     libconfig.Duration(DefaultHealthyInterval),
			ReservedExpiration:  libconfig.Duration(DefaultReservedExpiration),
			MaxCacheBytes:       DefaultMaxCacheBytes,
			LogLinesPerInstance: DefaultLogLinesPerInstance,
			ReapInterval:        libconfig.Duration(DefaultReapInterval),
			MetricsInterval:     libconfig.Duration(DefaultMetricsInterval),
			DiskPollInterval:    libconfig.Duration(DefaultDiskPollInterval),
			DefaultRegistry:     DefaultRegistry,
			ImageGCGrace:        libconfig.Duration(DefaultImageGCGrace),
			ImagePullTimeout:    libconfig.Duration(DefaultImagePullTimeout),
		},
		LogLevel: DefaultLogLevel,
	}
}

// Load reads and validates the file at path over the defaults.
func Load(path string) (*Config, error) {
	return libconfig.LoadOver(path, Default())
}

// Advertised is the address others dial to reach this rep.
func (c *Config) Advertised() string {
	if c.AdvertiseAddress != "" {
		return c.AdvertiseAddress
	}
	return c.ListenAddress
}

// Validate names the first problem of every field that is wrong.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("nil config")
	}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if strings.TrimSpace(c.CellID) == "" {
		check(libconfig.Invalid("cell_id", "is required"))
	}
	check(libconfig.Address("listen_address", c.ListenAddress))
	check(libconfig.DebugServer(c.DebugAddress, c.DebugAdminAddress))
	check(libconfig.Address("bbs_address", c.BBSAddress))
	if c.AdvertiseAddress != "" {
		check(libconfig.Address("advertise_address", c.AdvertiseAddress))
	}
	check(libconfig.OptionalTLS("tls", c.TLS))
	if _, err := c.Names(); err != nil {
		check(err)
	}
	if c.MemoryMB <= 0 {
		check(libconfig.Invalid("memory_mb", "must be positive, got %d", c.MemoryMB))
	}
	if c.DiskMB <= 0 {
		check(libconfig.Invalid("disk_mb", "must be positive, got %d", c.DiskMB))
	}
	if c.Containers <= 0 {
		check(libconfig.Invalid("containers", "must be positive, got %d", c.Containers))
	}
	if c.PresenceTTL <= 0 || c.PresenceInterval <= 0 || c.PresenceInterval >= c.PresenceTTL {
		check(libconfig.Invalid("presence_interval", "must be positive and shorter than presence_ttl"))
	}
	if c.PollingInterval <= 0 {
		check(libconfig.Invalid("polling_interval", "must be positive"))
	}
	if c.EvacuationTimeout <= 0 {
		check(libconfig.Invalid("evacuation_timeout", "must be positive, got %s", c.EvacuationTimeout.Duration()))
	}
	if c.EvacuationPollingInterval <= 0 || c.EvacuationPollingInterval > c.EvacuationTimeout {
		check(libconfig.Invalid("evacuation_polling_interval", "must be positive and not longer than evacuation_timeout, got %s", c.EvacuationPollingInterval.Duration()))
	}
	check(c.Executor.validate())
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		check(libconfig.Invalid("log_level", "%v", err))
	}
	return errors.Join(errs...)
}

// Names are the certificate names the gRPC server authorises its callers by.
func (c *Config) Names() (authz.Names, error) { return authz.ComponentNames(c.IdentityCommonNames) }

func (e *ExecutorConfig) validate() error {
	var errs []error
	switch e.Backend {
	case "containerd":
		if e.ContainerdSocket == "" {
			errs = append(errs, libconfig.Invalid("executor.containerd_socket", "is required for the containerd backend"))
		}
		if _, _, err := net.ParseCIDR(e.Subnet); err != nil {
			errs = append(errs, libconfig.Invalid("executor.subnet", "must be a CIDR, got %q", e.Subnet))
		}
		if net.ParseIP(e.ExternalIP) == nil {
			errs = append(errs, libconfig.Invalid("executor.external_ip", "must be an IP address, got %q", e.ExternalIP))
		}
		if e.PortRangeStart <= 0 || e.PortRangeEnd > 65535 || e.PortRangeStart > e.PortRangeEnd {
			errs = append(errs, libconfig.Invalid("executor.port_range_start", "must be a range within 1-65535, got %d-%d", e.PortRangeStart, e.PortRangeEnd))
		}
	case "sim":
		if e.SimFailureRate < 0 || e.SimFailureRate > 1 {
			errs = append(errs, libconfig.Invalid("executor.sim_failure_rate", "must be between 0 and 1"))
		}
	default:
		errs = append(errs, libconfig.Invalid("executor.backend", "must be \"containerd\" or \"sim\", got %q", e.Backend))
	}
	if e.StateDir == "" {
		errs = append(errs, libconfig.Invalid("executor.state_dir", "is required"))
	}
	for _, d := range []struct {
		field string
		value libconfig.Duration
	}{
		{"grace_period", e.GracePeriod}, {"unhealthy_interval", e.UnhealthyInterval},
		{"healthy_interval", e.HealthyInterval}, {"reserved_expiration", e.ReservedExpiration},
		{"reap_interval", e.ReapInterval}, {"metrics_interval", e.MetricsInterval},
		{"disk_poll_interval", e.DiskPollInterval},
	} {
		if d.value <= 0 {
			errs = append(errs, libconfig.Invalid("executor."+d.field, "must be positive, got %s", d.value.Duration()))
		}
	}
	errs = append(errs, e.validateRegistry()...)
	errs = append(errs, validateEgressRules(e.DefaultEgressRules)...)
	errs = append(errs, validateUserNamespace(e.UserNamespace)...)
	if e.MaxCacheBytes <= 0 {
		errs = append(errs, libconfig.Invalid("executor.max_cache_bytes", "must be positive, got %d", e.MaxCacheBytes))
	}
	if e.LogLinesPerInstance <= 0 {
		errs = append(errs, libconfig.Invalid("executor.log_lines_per_instance", "must be positive, got %d", e.LogLinesPerInstance))
	}
	return errors.Join(errs...)
}

// validateRegistry checks the settings of docker:// pulls.
func (e *ExecutorConfig) validateRegistry() []error {
	var errs []error
	if !registryHost(e.DefaultRegistry) {
		errs = append(errs, libconfig.Invalid("executor.default_registry", "must be HOST[:PORT], got %q", e.DefaultRegistry))
	}
	if len(e.InsecureRegistries) > MaxInsecureRegistries {
		errs = append(errs, libconfig.Invalid("executor.insecure_registries", "must have at most %d entries, got %d", MaxInsecureRegistries, len(e.InsecureRegistries)))
	}
	for i, h := range e.InsecureRegistries {
		if !registryHost(h) {
			errs = append(errs, libconfig.Invalid(fmt.Sprintf("executor.insecure_registries[%d]", i), "must be HOST[:PORT], got %q", h))
		}
	}
	if e.RegistryCAFile != "" && !filepath.IsAbs(e.RegistryCAFile) {
		errs = append(errs, libconfig.Invalid("executor.registry_ca_file", "must be an absolute path, got %q", e.RegistryCAFile))
	}
	if e.ImageGCGrace < 0 {
		errs = append(errs, libconfig.Invalid("executor.image_gc_grace", "must not be negative, got %s", e.ImageGCGrace.Duration()))
	}
	if e.ImagePullTimeout <= 0 {
		errs = append(errs, libconfig.Invalid("executor.image_pull_timeout", "must be positive, got %s", e.ImagePullTimeout.Duration()))
	}
	return errs
}

// registryHost reports whether s is a registry HOST[:PORT], as a docker URL names it.
func registryHost(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	ref, err := dockerref.Parse("docker://" + s + "/x")
	return err == nil && ref.Registry == s
}

// validateUserNamespace checks the cell's user namespace range, one error per bad
// field: executor.user_namespace.field.
func validateUserNamespace(u *executor.UserNamespace) []error {
	if u == nil {
		return nil
	}
	return fieldErrors(u.Validate("executor.user_namespace"))
}

// fieldErrors turns "field: reason" errors (joined or not) into field errors.
func fieldErrors(err error) []error {
	if err == nil {
		return nil
	}
	each := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		each = joined.Unwrap()
	}
	out := make([]error, 0, len(each))
	for _, e := range each {
		field, reason, _ := strings.Cut(e.Error(), ": ")
		out = append(out, libconfig.Invalid(field, "%s", reason))
	}
	return out
}

// validateEgressRules checks the cell's default egress rules by the LRP API's rules (as
// the firewall parses them), one error per bad field: executor.default_egress_rules[i].field.
func validateEgressRules(rules []*modelsv1.EgressRule) []error {
	_, err := firewall.Parse("executor.default_egress_rules", rules)
	return fieldErrors(err)
}
