package lock

import (
	"errors"
	"log/slog"
	"time"

	libconfig "drover.dev/lib/config"
)

// Defaults of a lock's timing, as Locket's (reference/bbs.md §5: 15 s / 5 s).
const (
	DefaultTTL           = 15 * time.Second
	DefaultRetryInterval = 5 * time.Second
)

// Config is the lock part of the configuration file of a component that holds a lock
// (auctioneer, converger, route-emitter). Embedded in the component's Config, its
// fields sit at the top level of the file: lock_ttl, lock_retry_interval, lock_owner.
type Config struct {
	// LockTTL is the lease: a holder that cannot renew within it loses the lock.
	LockTTL libconfig.Duration `json:"lock_ttl"`
	// LockRetryInterval is the period of acquisition attempts and renewals.
	LockRetryInterval libconfig.Duration `json:"lock_retry_interval"`
	// LockOwner identifies this instance in the lock (default "<component>-<random hex>").
	LockOwner string `json:"lock_owner,omitempty"`
}

// DefaultConfig is the lock configuration with every default filled in.
func DefaultConfig() Config {
	return Config{LockTTL: libconfig.Duration(DefaultTTL), LockRetryInterval: libconfig.Duration(DefaultRetryInterval)}
}

// ValidateLock names the problem of every lock field that is wrong: both durations are
// positive and a renewal comes before the lease runs out (retry interval < TTL).
func (c Config) ValidateLock() error {
	var errs []error
	for _, d := range []struct {
		field string
		value libconfig.Duration
	}{{"lock_ttl", c.LockTTL}, {"lock_retry_interval", c.LockRetryInterval}} {
		if d.value <= 0 {
			errs = append(errs, libconfig.Invalid(d.field, "must be positive, got %s", d.value.Duration()))
		}
	}
	if c.LockTTL > 0 && c.LockRetryInterval >= c.LockTTL {
		errs = append(errs, libconfig.Invalid("lock_retry_interval", "must be shorter than lock_ttl (%s), got %s",
			c.LockTTL.Duration(), c.LockRetryInterval.Duration()))
	}
	return errors.Join(errs...)
}

// LockOwnerID is the owner id to hold the lock under (see OwnerID).
func (c Config) LockOwnerID(component string) string { return OwnerID(c.LockOwner, component) }

// LockOptions are the options of the lock key held by owner with this timing; value is
// stored with the lock (e.g. the holder's address).
func (c Config) LockOptions(key, owner, value string, logger *slog.Logger) Options {
	return Options{Key: key, Owner: owner, Value: value, TTL: c.LockTTL.Duration(),
		RetryInterval: c.LockRetryInterval.Duration(), Logger: logger}
}
