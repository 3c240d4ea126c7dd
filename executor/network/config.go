package network

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
)

// DefaultCNIBinDir is where Debian's containernetworking-plugins installs the plugins.
const DefaultCNIBinDir = "/usr/lib/cni"

// maxBridgeNameLen is the Linux limit on interface names (IFNAMSIZ - 1).
const maxBridgeNameLen = 15

// Config is one cell's network: its bridge, subnet, address and host-port range, and the
// directory that holds everything the Manager records.
type Config struct {
	StateDir       string // netns files, IPAM data, allocation records
	CNIBinDir      string // default /usr/lib/cni
	BridgeName     string // e.g. "drover1"
	Subnet         string // e.g. "10.88.1.0/24"
	ExternalIP     string // the cell's address, e.g. "127.0.0.1"
	PortRangeStart int
	PortRangeEnd   int
}

// withDefaults returns cfg with empty optional fields filled in.
func (cfg Config) withDefaults() Config {
	if cfg.CNIBinDir == "" {
		cfg.CNIBinDir = DefaultCNIBinDir
	}
	return cfg
}

// Validate reports the first field of cfg that breaks a rule. It expects defaults applied.
func (cfg Config) Validate() error {
	if cfg.StateDir == "" {
		return fmt.Errorf("network config: state_dir is required")
	}
	if !filepath.IsAbs(cfg.StateDir) {
		return fmt.Errorf("network config: state_dir %q must be an absolute path", cfg.StateDir)
	}
	if cfg.CNIBinDir == "" {
		return fmt.Errorf("network config: cni_bin_dir is required")
	}
	if err := validateBridgeName(cfg.BridgeName); err != nil {
		return err
	}
	ip, subnet, err := net.ParseCIDR(cfg.Subnet)
	if err != nil {
		return fmt.Errorf("network config: subnet %q is not a CIDR: %w", cfg.Subnet, err)
	}
	if ip.To4() == nil {
		return fmt.Errorf("network config: subnet %q must be IPv4", cfg.Subnet)
	}
	if ones, _ := subnet.Mask.Size(); ones > 29 {
		return fmt.Errorf("network config: subnet %q is too small (at most /29)", cfg.Subnet)
	}
	ext := net.ParseIP(cfg.ExternalIP)
	if ext == nil || ext.To4() == nil {
		return fmt.Errorf("network config: external_ip %q must be an IPv4 address", cfg.ExternalIP)
	}
	if cfg.PortRangeStart < 1 || cfg.PortRangeStart > 65535 {
		return fmt.Errorf("network config: port_range_start %d must be in [1,65535]", cfg.PortRangeStart)
	}
	if cfg.PortRangeEnd < cfg.PortRangeStart || cfg.PortRangeEnd > 65535 {
		return fmt.Errorf("network config: port_range_end %d must be in [port_range_start=%d,65535]",
			cfg.PortRangeEnd, cfg.PortRangeStart)
	}
	return nil
}

// validateBridgeName accepts names Linux and CNI both take as an interface and network name.
func validateBridgeName(name string) error {
	if name == "" {
		return fmt.Errorf("network config: bridge_name is required")
	}
	if len(name) > maxBridgeNameLen {
		return fmt.Errorf("network config: bridge_name %q is longer than %d characters", name, maxBridgeNameLen)
	}
	if !validID.MatchString(name) || strings.ContainsAny(name, ".") {
		return fmt.Errorf("network config: bridge_name %q may only contain letters, digits, '-' and '_' and must start with a letter or digit", name)
	}
	return nil
}
