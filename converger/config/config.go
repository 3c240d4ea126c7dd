// Package config is the converger's configuration: one JSON file, validated at start.
package config

import (
	"errors"
	"time"

	"drover.dev/bbs/client/lock"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"
	"drover.dev/lib/tlsconfig"
)

// Defaults (reference/bbs.md §3.1).
const (
	DefaultDebugAddress                = "127.0.0.1:9020"
	DefaultBBSAddress                  = "127.0.0.1:8889"
	DefaultRepeatInterval              = 30 * time.Second
	DefaultCommunicationTimeout        = 10 * time.Second
	DefaultStaleUnclaimedDuration      = 30 * time.Second
	DefaultKickTaskDuration            = 30 * time.Second
	DefaultExpirePendingTaskDuration   = 30 * time.Minute
	DefaultExpireCompletedTaskDuration = 120 * time.Second
	DefaultApplyWorkers                = 4
	DefaultLogLevel                    = "info"
	LockKey                            = "converger"
)

// Config is the converger's configuration file.
type Config struct {
	DebugAddress string `json:"debug_address"`
	// DebugAdminAddress is where pprof and /log-level are served: "" on debug_address
	// (which must then be loopback), "off", "unix:PATH" or a loopback host:port.
	DebugAdminAddress string `json:"debug_admin_address"`
	BBSAddress        string `json:"bbs_address"`
	// TLS is the converger's client certificate for the BBS; without it the link is
	// plaintext (tests only).
	TLS tlsconfig.Files `json:"tls"`
	// RepeatInterval separates the end of one pass from the start of the next.
	RepeatInterval libconfig.Duration `json:"repeat_interval"`
	// Config is the converger lock's lock_ttl, lock_retry_interval and lock_owner
	// (default "converger-<random hex>").
	lock.Config
	// CommunicationTimeout bounds each BBS call (the snapshot stream as a whole).
	CommunicationTimeout libconfig.Duration `json:"communication_timeout"`
	// StaleUnclaimedDuration: UNCLAIMED rows older than this are re-auctioned.
	StaleUnclaimedDuration libconfig.Duration `json:"stale_unclaimed_duration"`
	// KickTaskDuration: RESOLVING tasks stuck this long are demoted, COMPLETED ones get
	// their callback retried.
	KickTaskDuration libconfig.Duration `json:"kick_task_duration"`
	// ExpirePendingTaskDuration: PENDING tasks older than this are failed.
	ExpirePendingTaskDuration libconfig.Duration `json:"expire_pending_task_duration"`
	// ExpireCompletedTaskDuration: tasks completed this long ago are deleted.
	ExpireCompletedTaskDuration libconfig.Duration `json:"expire_completed_task_duration"`
	LogLevel                    string             `json:"log_level"`
	// ApplyWorkers is how many Apply calls a pass runs at once (the actions of one
	// process guid or task stay in one stream, in order).
	ApplyWorkers int `json:"apply_workers"`
}

// Default returns a configuration with every default filled in.
func Default() Config {
	return Config{
		DebugAddress:                DefaultDebugAddress,
		BBSAddress:                  DefaultBBSAddress,
		RepeatInterval:              libconfig.Duration(DefaultRepeatInterval),
		Config:                      lock.DefaultConfig(),
		CommunicationTimeout:        libconfig.Duration(DefaultCommunicationTimeout),
		StaleUnclaimedDuration:      libconfig.Duration(DefaultStaleUnclaimedDuration),
		KickTaskDuration:            libconfig.Duration(DefaultKickTaskDuration),
		ExpirePendingTaskDuration:   libconfig.Duration(DefaultExpirePendingTaskDuration),
		ExpireCompletedTaskDuration: libconfig.Duration(DefaultExpireCompletedTaskDuration),
		LogLevel:                    DefaultLogLevel,
		ApplyWorkers:                DefaultApplyWorkers,
	}
}

// Load reads and validates the file at path over the defaults.
func Load(path string) (*Config, error) {
	return libconfig.LoadOver(path, Default())
}

// Validate names the problem of every field that is wrong.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("nil config")
	}
	var errs []error
	errs = append(errs, libconfig.Addresses([][2]string{{"bbs_address", c.BBSAddress}})...)
	errs = append(errs, libconfig.DebugServer(c.DebugAddress, c.DebugAdminAddress))
	if err := libconfig.OptionalTLS("tls", c.TLS); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.ValidateLock())
	for _, d := range []struct {
		field string
		value libconfig.Duration
	}{
		{"repeat_interval", c.RepeatInterval}, {"communication_timeout", c.CommunicationTimeout}, {"stale_unclaimed_duration", c.StaleUnclaimedDuration},
		{"kick_task_duration", c.KickTaskDuration}, {"expire_pending_task_duration", c.ExpirePendingTaskDuration},
		{"expire_completed_task_duration", c.ExpireCompletedTaskDuration},
	} {
		if d.value <= 0 {
			errs = append(errs, libconfig.Invalid(d.field, "must be positive, got %s", d.value.Duration()))
		}
	}
	if c.ApplyWorkers <= 0 {
		errs = append(errs, libconfig.Invalid("apply_workers", "must be positive, got %d", c.ApplyWorkers))
	}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, libconfig.Invalid("log_level", "%v", err))
	}
	return errors.Join(errs...)
}
