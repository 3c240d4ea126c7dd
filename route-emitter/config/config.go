// Package config is the route-emitter's configuration: one JSON file, validated at start.
package config

import (
	"errors"
	"net/url"
	"time"

	"drover.dev/bbs/client/lock"
	"drover.dev/lib/authz"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"
	"drover.dev/lib/tlsconfig"
)

// Defaults (reference/routing.md §2.2).
const (
	DefaultListenAddress           = "127.0.0.1:17010" // gRPC RouteEmitterService
	DefaultDebugAddress            = "127.0.0.1:17009" // /metrics /healthz pprof /log-level
	DefaultBBSAddress              = "127.0.0.1:8889"
	DefaultNATSAddress             = "nats://127.0.0.1:4222"
	DefaultSyncInterval            = 60 * time.Second
	DefaultRegisterInterval        = 20 * time.Second // until a router tells its own
	DefaultJitterFactor            = 0.2
	DefaultMaxMessagesPerSecond    = 10000 // cap on bulk registration bursts
	DefaultUnregistrationInterval  = 30 * time.Second
	DefaultUnregistrationSendCount = 20
	DefaultGreetInterval           = time.Second
	DefaultCommunicationTimeout    = 30 * time.Second
	DefaultLogLevel                = "info"
	LockKey                        = "route_emitter"
)

// Config is the route-emitter's configuration file.
type Config struct {
	// ListenAddress serves the gRPC RouteEmitterService.
	ListenAddress string `json:"listen_address"`
	DebugAddress  string `json:"debug_address"`
	// DebugAdminAddress is where pprof and /log-level are served: "" on debug_address
	// (which must then be loopback), "off", "unix:PATH" or a loopback host:port.
	DebugAdminAddress string `json:"debug_admin_address"`
	BBSAddress        string `json:"bbs_address"`
	// TLS is the BBS client certificate and the gRPC server certificate; without it both
	// links are plaintext (tests only).
	TLS tlsconfig.Files `json:"tls"`
	// IdentityCommonNames maps the common names of callers' certificates to their roles
	// (operator, bbs, auctioneer, converger, route-emitter); when set it replaces the
	// default (the dev stack's names, authz.DefaultCommonNames). Callers whose
	// certificate has no role are refused (docs/architecture.md "Authorisation").
	IdentityCommonNames map[string]string `json:"identity_common_names,omitempty"`
	// CellID selects local mode: only this cell's instances, no lock.
	CellID        string   `json:"cell_id,omitempty"`
	NATSAddresses []string `json:"nats_addresses"`
	// NATSUsername authenticates to NATS with the password in NATSPasswordFile (kept out
	// of this file and of logs) or, inline, NATSPassword.
	NATSUsername     string `json:"nats_username,omitempty"`
	NATSPassword     string `json:"nats_password,omitempty"`
	NATSPasswordFile string `json:"nats_password_file,omitempty"`
	// NATSTLS enables TLS to NATS when set.
	NATSTLS tlsconfig.Files `json:"nats_tls"`
	// SyncInterval is the period of full syncs with the BBS.
	SyncInterval libconfig.Duration `json:"sync_interval"`
	// RegisterInterval is the re-registration period until a router announces its own.
	RegisterInterval libconfig.Duration `json:"register_interval"`
	// JitterFactor bounds the random delay after a router.start: [0, factor × interval).
	JitterFactor float64 `json:"jitter_factor"`
	// MaxMessagesPerSecond caps the messages in any one-second window: the registrations
	// of a full sync and of a re-registration are paced (a little below it) so that,
	// with the messages sent at once (events, unregistrations), no window holds more.
	MaxMessagesPerSecond int `json:"max_messages_per_second"`
	// UnregistrationInterval and UnregistrationSendCount: each unregister is re-sent
	// every interval, count times, unless a matching register cancels it.
	UnregistrationInterval  libconfig.Duration `json:"unregistration_interval"`
	UnregistrationSendCount int                `json:"unregistration_send_count"`
	// GreetInterval is the period of router.greet until a router answers.
	GreetInterval libconfig.Duration `json:"greet_interval"`
	// StateFile keeps the event cursor and the table across restarts; empty = none.
	StateFile string `json:"state_file,omitempty"`
	// Config is the emitter lock's lock_ttl, lock_retry_interval and lock_owner
	// (default "route-emitter-<random hex>"); local mode holds no lock.
	lock.Config
	// CommunicationTimeout bounds each BBS call of a sync, and how long a sync waits for
	// the event stream to start before it reads anyway.
	CommunicationTimeout libconfig.Duration `json:"communication_timeout"`
	LogLevel             string             `json:"log_level"`
}

// Default returns a configuration with every default filled in.
func Default() Config {
	return Config{
		ListenAddress:           DefaultListenAddress,
		DebugAddress:            DefaultDebugAddress,
		BBSAddress:              DefaultBBSAddress,
		NATSAddresses:           []string{DefaultNATSAddress},
		SyncInterval:            libconfig.Duration(DefaultSyncInterval),
		RegisterInterval:        libconfig.Duration(DefaultRegisterInterval),
		JitterFactor:            DefaultJitterFactor,
		MaxMessagesPerSecond:    DefaultMaxMessagesPerSecond,
		UnregistrationInterval:  libconfig.Duration(DefaultUnregistrationInterval),
		UnregistrationSendCount: DefaultUnregistrationSendCount,
		GreetInterval:           libconfig.Duration(DefaultGreetInterval),
		Config:                  lock.DefaultConfig(),
		CommunicationTimeout:    libconfig.Duration(DefaultCommunicationTimeout),
		LogLevel:                DefaultLogLevel,
	}
}

// Load reads and validates the file at path over the defaults.
func Load(path string) (*Config, error) {
	return libconfig.LoadOver(path, Default())
}

// LocalMode reports whether the emitter serves one cell (cell_id set).
func (c *Config) LocalMode() bool { return c.CellID != "" }

// Names are the certificate names the gRPC server authorises its callers by.
func (c *Config) Names() (authz.Names, error) { return authz.ComponentNames(c.IdentityCommonNames) }

// Validate names the problem of every field that is wrong.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("nil config")
	}
	var errs []error
	errs = append(errs, libconfig.Addresses([][2]string{{"listen_address", c.ListenAddress}, {"bbs_address", c.BBSAddress}})...)
	errs = append(errs, libconfig.DebugServer(c.DebugAddress, c.DebugAdminAddress))
	if len(c.NATSAddresses) == 0 {
		errs = append(errs, libconfig.Invalid("nats_addresses", "at least one address is required"))
	}
	for _, a := range c.NATSAddresses {
		if u, err := url.Parse(a); err != nil || u.Host == "" {
			errs = append(errs, libconfig.Invalid("nats_addresses", "must be URLs like nats://host:port, got %q", a))
		}
	}
	_, namesErr := c.Names()
	for _, err := range []error{libconfig.OptionalTLS("tls", c.TLS), libconfig.OptionalTLS("nats_tls", c.NATSTLS), namesErr} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := libconfig.UserPassword("nats", c.NATSUsername, c.NATSPassword, c.NATSPasswordFile); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.ValidateLock())
	for _, d := range []struct {
		field string
		value libconfig.Duration
	}{
		{"sync_interval", c.SyncInterval}, {"register_interval", c.RegisterInterval},
		{"unregistration_interval", c.UnregistrationInterval}, {"greet_interval", c.GreetInterval},
		{"communication_timeout", c.CommunicationTimeout},
	} {
		if d.value <= 0 {
			errs = append(errs, libconfig.Invalid(d.field, "must be positive, got %s", d.value.Duration()))
		}
	}
	if c.JitterFactor < 0 || c.JitterFactor >= 1 {
		errs = append(errs, libconfig.Invalid("jitter_factor", "must be in [0, 1), got %g", c.JitterFactor))
	}
	if c.MaxMessagesPerSecond <= 0 {
		errs = append(errs, libconfig.Invalid("max_messages_per_second", "must be positive, got %d", c.MaxMessagesPerSecond))
	}
	if c.UnregistrationSendCount < 0 {
		errs = append(errs, libconfig.Invalid("unregistration_send_count", "must not be negative, got %d", c.UnregistrationSendCount))
	}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, libconfig.Invalid("log_level", "%v", err))
	}
	return errors.Join(errs...)
}
