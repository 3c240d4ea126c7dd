package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"drover.dev/bbs/crypt"
	"drover.dev/bbs/models"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxConns is the pool size when Config.MaxConns is zero.
const DefaultMaxConns = 50

// Config says how to reach Postgres and how to encrypt data at rest.
type Config struct {
	// URL is a libpq-style connection string, e.g. postgres://user@host:5432/db?sslmode=disable.
	URL string
	// MaxConns caps the connection pool; 0 means DefaultMaxConns.
	MaxConns int32
	// EncryptionKeys maps key labels to passphrases. Keep an old key configured until
	// every replica runs with the new active one; Migrate then re-encrypts old data.
	EncryptionKeys map[string]string
	// ActiveKeyLabel is the key new data is encrypted with.
	ActiveKeyLabel string
	// Clock is the time source for since, expiry and event times; nil means time.Now.
	Clock func() time.Time
}

// Postgres is the Postgres implementation of DB. It is safe for concurrent use and keeps
// no state that other BBS replicas need: all of it lives in the database.
type Postgres struct {
	pool    *pgxpool.Pool
	crypt   *crypt.Cryptor
	clock   func() time.Time
	restart models.RestartPolicy
	logger  *slog.Logger
	// actor is who the calls of this view act for (ForCell); the zero Actor is trusted.
	actor models.Actor
}

var _ DB = (*Postgres)(nil)

// ForCell returns a view of the store for the calls of a rep whose certificate names
// cellID, sharing the pool (close only the original). Like Kubernetes' NodeRestriction,
// its lifecycle writes change only rows cellID holds, or take an UNCLAIMED instance or a
// PENDING task for it, and refuse a missing row; instance keys and cell ids it is given
// must name cellID; its reads of a DesiredLRP or a task need one of that LRP's instances,
// or the task, on cellID, and its lists of instances and tasks are limited to cellID.
// Every refusal is checked on the row locked by the write and is Unauthorized
// (PermissionDenied); nothing changes. The other calls of the view are not restricted:
// the BBS's authorisation policy never lets a cell make them.
func (p *Postgres) ForCell(cellID string) DB {
	view := *p
	view.actor = models.CellActor(cellID)
	return &view
}

// Open builds the connection pool and the cryptor. It does not connect yet: call Ping
// or Migrate to find out whether the database is reachable.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*Postgres, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.URL == "" {
		return nil, errors.New("store: database URL is required")
	}
	cryptor, err := crypt.New(cfg.EncryptionKeys, cfg.ActiveKeyLabel)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	poolConfig, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("store: parsing the database URL: %w", err)
	}
	poolConfig.MaxConns = cfg.MaxConns
	if poolConfig.MaxConns <= 0 {
		poolConfig.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolConfig)
	if err != nil {
		return nil, fmt.Errorf("store: creating the connection pool: %w", err)
	}
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	return &Postgres{
		pool:    pool,
		crypt:   cryptor,
		clock:   clock,
		restart: models.DefaultRestartPolicy(),
		logger:  logger.With("component", "store"),
	}, nil
}

// Close closes every pooled connection; it waits for connections in use to come back.
func (p *Postgres) Close() { p.pool.Close() }

// Ping checks that Postgres answers.
func (p *Postgres) Ping(ctx context.Context) error {
	if err := p.pool.Ping(ctx); err != nil {
		return unavailable("ping", err)
	}
	return nil
}

// Stat reports the connection pool's counters, for metrics.
func (p *Postgres) Stat() *pgxpool.Stat { return p.pool.Stat() }

func (p *Postgres) now() time.Time { return p.clock() }
