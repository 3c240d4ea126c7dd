// Package lock keeps a named BBS lock as an ifrit member: it becomes ready once the lock
// is held, renews it, and fails when the lock is lost so that the process exits and its
// supervisor restarts it as a passive instance.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"drover.dev/bbs/client"
	"drover.dev/bbs/models"
	"drover.dev/lib/logging"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// Service is the BBS's lock API.
type Service interface {
	// AcquireLock takes the lock for owner, or renews it when owner holds it already.
	AcquireLock(ctx context.Context, key, owner, value string, ttl time.Duration) error
	// ReleaseLock gives up the lock owner holds.
	ReleaseLock(ctx context.Context, key, owner string) error
}

// OwnerID is the owner id a component holds its lock under: the configured one, or
// "<component>-<16 random hex digits>" when none is configured.
func OwnerID(configured, component string) string {
	if configured != "" {
		return configured
	}
	random := make([]byte, 8)
	_, _ = rand.Read(random)
	return component + "-" + hex.EncodeToString(random)
}

// ErrLost is returned by Run when the lock is held by another owner or could not be
// renewed within its TTL.
var ErrLost = errors.New("lock lost")

// Options name the lock and its timing.
type Options struct {
	Key   string
	Owner string
	// Value is stored with the lock (e.g. the holder's address).
	Value string
	// TTL is the lease; RetryInterval the period of acquisition attempts and renewals.
	TTL           time.Duration
	RetryInterval time.Duration
	Logger        *slog.Logger
}

// Runner holds the lock while it runs.
type Runner struct {
	service Service
	opts    Options
	log     *slog.Logger
}

// New returns a runner of the lock described by opts.
func New(service Service, opts Options) *Runner {
	log := logging.OrDiscard(opts.Logger).With("lock", opts.Key, "owner", opts.Owner)
	return &Runner{service: service, opts: opts, log: log}
}

// Run tries to acquire the lock every retry interval until it succeeds, becomes ready,
// and renews it every retry interval. A collision while holding, or no successful
// renewal for a whole TTL, returns ErrLost. A signal releases the lock and returns nil.
func (r *Runner) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	ticker := time.NewTicker(r.opts.RetryInterval)
	defer ticker.Stop()

	r.log.Info("lock-acquiring")
	for !r.try() {
		select {
		case <-signals:
			return nil
		case <-ticker.C:
		}
	}
	r.log.Info("lock-acquired")
	close(ready)

	lastRenewed := time.Now()
	for {
		select {
		case <-signals:
			r.release()
			return nil
		case <-ticker.C:
		}
		err := r.acquire()
		switch {
		case err == nil:
			lastRenewed = time.Now()
		case errors.Is(models.FromError(err), models.ErrLockCollision):
			r.log.Error("lock-lost", "error", err.Error())
			return fmt.Errorf("%w: %s is held by another owner", ErrLost, r.opts.Key)
		case time.Since(lastRenewed) >= r.opts.TTL:
			r.log.Error("lock-lost", "error", err.Error(), "since_renewed", time.Since(lastRenewed).String())
			return fmt.Errorf("%w: %s not renewed for %s: %v", ErrLost, r.opts.Key, r.opts.TTL, err)
		default:
			r.log.Error("lock-renewal-failed", "error", err.Error())
		}
	}
}

// try attempts one acquisition and logs why it failed.
func (r *Runner) try() bool {
	err := r.acquire()
	if err != nil {
		r.log.Info("lock-not-acquired", "error", err.Error())
	}
	return err == nil
}

// acquire calls AcquireLock with a deadline of one retry interval.
func (r *Runner) acquire() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.RetryInterval)
	defer cancel()
	return r.service.AcquireLock(ctx, r.opts.Key, r.opts.Owner, r.opts.Value, r.opts.TTL)
}

// release gives the lock up so that a passive instance takes over at once.
func (r *Runner) release() {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.RetryInterval)
	defer cancel()
	if err := r.service.ReleaseLock(ctx, r.opts.Key, r.opts.Owner); err != nil {
		r.log.Error("lock-release-failed", "error", err.Error())
		return
	}
	r.log.Info("lock-released")
}

// NewService adapts the BBS gRPC client. TTLs are sent in whole seconds (at least 1).
func NewService(c *client.Client) Service { return bbsService{c: c} }

type bbsService struct{ c *client.Client }

func (b bbsService) AcquireLock(ctx context.Context, key, owner, value string, ttl time.Duration) error {
	_, err := b.c.AcquireLock(ctx, &bbsv1.AcquireLockRequest{
		Key: key, Owner: owner, Value: value, TtlSeconds: uint32(max(1, ttl.Round(time.Second)/time.Second)),
	})
	return err
}

func (b bbsService) ReleaseLock(ctx context.Context, key, owner string) error {
	_, err := b.c.ReleaseLock(ctx, &bbsv1.ReleaseLockRequest{Key: key, Owner: owner})
	return err
}
