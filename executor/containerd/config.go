package containerd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"drover.dev/executor/network"
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
}

// Defaults used by withDefaults.
const (
	DefaultGracePeriod      = 10 * time.Second
	DefaultDiskPollInterval = 2 * time.Second
	DefaultBusyboxPath      = "/usr/bin/busybox"
	DefaultSnapshotter      = "overlayfs"
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
	return errors.Join(errs...)
}
