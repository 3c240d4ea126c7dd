package router

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"
	"drover.dev/lib/tlsconfig"
)

// Config is the stand-in router's configuration (one JSON file, -config).
type Config struct {
	// NATSAddresses are the NATS servers ("nats://127.0.0.1:4222" or "127.0.0.1:4222").
	NATSAddresses []string `json:"nats_addresses"`
	// NATSUsername authenticates to NATS with the password in NATSPasswordFile or,
	// inline, NATSPassword.
	NATSUsername     string `json:"nats_username,omitempty"`
	NATSPassword     string `json:"nats_password,omitempty"`
	NATSPasswordFile string `json:"nats_password_file,omitempty"`
	// NATSTLS, when set, is the CA that signs the NATS servers' certificates and the
	// router's client certificate.
	NATSTLS tlsconfig.Files `json:"nats_tls"`
	// ListenAddress serves the proxied HTTP traffic, routed by Host header.
	ListenAddress string `json:"listen_address"`
	// AdminAddress serves GET /routes (the table as JSON) and GET /healthz.
	AdminAddress string `json:"admin_address"`
	// RegisterInterval is the minimumRegisterIntervalInSeconds the router announces.
	RegisterInterval libconfig.Duration `json:"register_interval"`
	// PruneThreshold is how long a non-TLS endpoint lives without a register.
	PruneThreshold libconfig.Duration `json:"prune_threshold"`
	// PruneInterval is how often stale endpoints are pruned.
	PruneInterval libconfig.Duration `json:"prune_interval"`
	// ID is the router's id in router.start ("0-<uuid>" when empty).
	ID       string `json:"id,omitempty"`
	LogLevel string `json:"log_level"`
}

// Defaults of the stand-in router: gorouter's code defaults (5 s register interval,
// 120 s prune threshold checked every 30 s) on the dev stack's ports.
const (
	DefaultListenAddress    = "127.0.0.1:8081"
	DefaultAdminAddress     = "127.0.0.1:8082"
	DefaultNATSAddress      = "nats://127.0.0.1:4222"
	DefaultRegisterInterval = 5 * time.Second
	DefaultPruneThreshold   = 120 * time.Second
	DefaultPruneInterval    = 30 * time.Second
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		NATSAddresses:    []string{DefaultNATSAddress},
		ListenAddress:    DefaultListenAddress,
		AdminAddress:     DefaultAdminAddress,
		RegisterInterval: libconfig.Duration(DefaultRegisterInterval),
		PruneThreshold:   libconfig.Duration(DefaultPruneThreshold),
		PruneInterval:    libconfig.Duration(DefaultPruneInterval),
		LogLevel:         "info",
	}
}

// Validate checks every field and names the ones that are wrong.
func (c *Config) Validate() error {
	var errs []error
	if len(c.NATSAddresses) == 0 {
		errs = append(errs, errors.New("nats_addresses: at least one required"))
	}
	for _, a := range c.NATSAddresses {
		if strings.TrimSpace(a) == "" {
			errs = append(errs, errors.New("nats_addresses: empty address"))
		}
	}
	if err := libconfig.UserPassword("nats", c.NATSUsername, c.NATSPassword, c.NATSPasswordFile); err != nil {
		errs = append(errs, err)
	}
	if err := libconfig.OptionalTLS("nats_tls", c.NATSTLS); err != nil {
		errs = append(errs, err)
	}
	for name, addr := range map[string]string{"listen_address": c.ListenAddress, "admin_address": c.AdminAddress} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: want host:port, got %q", name, addr))
		}
	}
	if c.RegisterInterval.Duration() < time.Second {
		errs = append(errs, fmt.Errorf("register_interval: at least 1s (it is sent in whole seconds), got %s", c.RegisterInterval))
	}
	if c.PruneThreshold.Duration() < time.Second {
		errs = append(errs, fmt.Errorf("prune_threshold: at least 1s, got %s", c.PruneThreshold))
	}
	if c.PruneInterval.Duration() <= 0 {
		errs = append(errs, fmt.Errorf("prune_interval: must be positive, got %s", c.PruneInterval))
	}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("log_level: %w", err))
	}
	return errors.Join(errs...)
}

// natsURL joins the addresses for nats.Connect, adding the nats:// scheme where missing.
func (c *Config) natsURL() string {
	urls := make([]string, len(c.NATSAddresses))
	for i, a := range c.NATSAddresses {
		a = strings.TrimSpace(a)
		if !strings.Contains(a, "://") {
			a = "nats://" + a
		}
		urls[i] = a
	}
	return strings.Join(urls, ",")
}
