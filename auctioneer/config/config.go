// Package config is the auctioneer's configuration: one JSON file, validated at start.
package config

import (
	"errors"
	"time"

	"drover.dev/bbs/client/lock"
	"drover.dev/lib/authz"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"
	"drover.dev/lib/tlsconfig"
)

// Defaults (reference/cell.md §1.9).
const (
	DefaultListenAddress           = "127.0.0.1:9016"
	DefaultDebugAddress            = "127.0.0.1:9017"
	DefaultBBSAddress              = "127.0.0.1:8889"
	DefaultCellStateTimeout        = 10 * time.Second
	DefaultCommunicationTimeout    = 10 * time.Second
	DefaultStartingContainerWeight = 0.25
	DefaultLogLevel                = "info"
	DefaultAuctionRunnerWorkers    = 1000
	LockKey                        = "auctioneer"
)

// Config is the auctioneer's configuration file.
type Config struct {
	ListenAddress string `json:"listen_address"`
	DebugAddress  string `json:"debug_address"`
	// DebugAdminAddress is where pprof and /log-level are served: "" on debug_address
	// (which must then be loopback), "off", "unix:PATH" or a loopback host:port.
	DebugAdminAddress string `json:"debug_admin_address"`
	BBSAddress        string `json:"bbs_address"`
	// TLS is the auctioneer's certificate for its server and as a client of the BBS and reps.
	TLS tlsconfig.Files `json:"tls"`
	// IdentityCommonNames maps the common names of callers' certificates to their roles
	// (operator, bbs, auctioneer, converger, route-emitter); when set it replaces the
	// default (the dev stack's names, authz.DefaultCommonNames). Callers whose
	// certificate has no role are refused (docs/architecture.md "Authorisation").
	IdentityCommonNames  map[string]string  `json:"identity_common_names,omitempty"`
	CellStateTimeout     libconfig.Duration `json:"cell_state_timeout"`
	CommunicationTimeout libconfig.Duration `json:"communication_timeout"`
	// Config is the auctioneer lock's lock_ttl, lock_retry_interval and lock_owner
	// (default "auctioneer-<random hex>").
	lock.Config
	StartingContainerWeight       float64 `json:"starting_container_weight"`
	BinPackFirstFitWeight         float64 `json:"bin_pack_first_fit_weight"`
	StartingContainerCountMaximum int     `json:"starting_container_count_maximum"`
	LogLevel                      string  `json:"log_level"`
	// AuctionRunnerWorkers bounds the parallel calls to reps and the BBS in one auction.
	AuctionRunnerWorkers int `json:"auction_runner_workers"`
}

// Default returns a configuration with every default filled in.
func Default() Config {
	return Config{
		ListenAddress:           DefaultListenAddress,
		DebugAddress:            DefaultDebugAddress,
		BBSAddress:              DefaultBBSAddress,
		CellStateTimeout:        libconfig.Duration(DefaultCellStateTimeout),
		CommunicationTimeout:    libconfig.Duration(DefaultCommunicationTimeout),
		Config:                  lock.DefaultConfig(),
		StartingContainerWeight: DefaultStartingContainerWeight,
		LogLevel:                DefaultLogLevel,
		AuctionRunnerWorkers:    DefaultAuctionRunnerWorkers,
	}
}

// Load reads and validates the file at path over the defaults.
func Load(path string) (*Config, error) {
	return libconfig.LoadOver(path, Default())
}

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
	if err := libconfig.OptionalTLS("tls", c.TLS); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.Names(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.ValidateLock())
	for _, d := range []struct {
		field string
		value libconfig.Duration
	}{
		{"cell_state_timeout", c.CellStateTimeout}, {"communication_timeout", c.CommunicationTimeout},
	} {
		if d.value <= 0 {
			errs = append(errs, libconfig.Invalid(d.field, "must be positive, got %s", d.value.Duration()))
		}
	}
	if c.AuctionRunnerWorkers <= 0 {
		errs = append(errs, libconfig.Invalid("auction_runner_workers", "must be positive, got %d", c.AuctionRunnerWorkers))
	}
	for _, w := range []struct {
		field string
		value float64
	}{
		{"starting_container_weight", c.StartingContainerWeight}, {"bin_pack_first_fit_weight", c.BinPackFirstFitWeight},
		{"starting_container_count_maximum", float64(c.StartingContainerCountMaximum)},
	} {
		if w.value < 0 {
			errs = append(errs, libconfig.Invalid(w.field, "must not be negative, got %v", w.value))
		}
	}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, libconfig.Invalid("log_level", "%v", err))
	}
	return errors.Join(errs...)
}
