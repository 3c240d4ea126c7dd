// Package store keeps the stager's ordered buildpack list of every stack in Postgres,
// in its own schema "stager" (with its own goose version table there). Positions of a
// stack are 1..n, dense: every change takes a per-stack transaction lock and shifts the
// others.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"drover.dev/lib/logging"
	"drover.dev/stager/staging"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Schema is the stager's Postgres schema.
const Schema = "stager"

// migrationLockID serialises concurrent stager migrations ("stager").
const migrationLockID = 0x737461676572

// Errors of the store.
var (
	ErrNotFound = errors.New("buildpack not found")
	ErrExists   = errors.New("buildpack already exists")
)

// Buildpack is a stored buildpack.
type Buildpack struct {
	staging.Buildpack
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Archive is a buildpack's uploaded archive.
type Archive struct {
	SHA256   string
	Size     int64
	BlobKey  string
	Filename string
}

// Store is the buildpack store. It is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
}

// Open builds the pool (it connects lazily: call Migrate).
func Open(ctx context.Context, url string, maxConns int32, logger *slog.Logger) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parsing the database URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Store{pool: pool, logger: logging.OrDiscard(logger)}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Migrate creates the schema and applies the embedded migrations under a session lock.
func (s *Store) Migrate(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+Schema); err != nil {
		return fmt.Errorf("store: creating schema %s: %w", Schema, err)
	}
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true), goose.WithTableName(Schema+".goose_db_version"))
	if err != nil {
		return fmt.Errorf("store: loading migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("store: migrating: %w", err)
	}
	for _, r := range results {
		s.logger.Info("applied-migration", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration.String())
	}
	return nil
}

const columns = `name, stack, position, sha256, size, blob_key, filename, created_at, updated_at`

func scan(row pgx.Row) (Buildpack, error) {
	var b Buildpack
	err := row.Scan(&b.Name, &b.Stack, &b.Position, &b.SHA256, &b.Size, &b.BlobKey, &b.Filename, &b.CreatedAt, &b.UpdatedAt)
	return b, err
}

// List returns the buildpacks of stack ("" for every stack), by stack then position.
func (s *Store) List(ctx context.Context, stack string) ([]Buildpack, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM stager.buildpacks WHERE $1 = '' OR stack = $1 ORDER BY stack, position`, stack)
	if err != nil {
		return nil, fmt.Errorf("store: listing buildpacks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Buildpack, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("store: listing buildpacks: %w", err)
	}
	return out, nil
}

// Get returns one buildpack (ErrNotFound).
func (s *Store) Get(ctx context.Context, stack, name string) (Buildpack, error) {
	b, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM stager.buildpacks WHERE stack = $1 AND name = $2`, stack, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return Buildpack{}, ErrNotFound
	}
	return b, err
}

// inStack runs f in a transaction holding the stack's lock.
func (s *Store) inStack(ctx context.Context, stack string, f func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('stager.buildpacks:' || $1))`, stack); err != nil {
			return err
		}
		return f(tx)
	})
}

func count(ctx context.Context, tx pgx.Tx, stack string) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM stager.buildpacks WHERE stack = $1`, stack).Scan(&n)
	return n, err
}

// Create registers b at position (0 or beyond the end: last), shifting the buildpacks
// at and after it down. ErrExists when the stack has one of that name.
func (s *Store) Create(ctx context.Context, name, stack string, position int, a Archive) (Buildpack, error) {
	var out Buildpack
	err := s.inStack(ctx, stack, func(tx pgx.Tx) error {
		n, err := count(ctx, tx, stack)
		if err != nil {
			return err
		}
		if position <= 0 || position > n+1 {
			position = n + 1
		}
		if _, err := tx.Exec(ctx, `UPDATE stager.buildpacks SET position = position + 1 WHERE stack = $1 AND position >= $2`, stack, position); err != nil {
			return err
		}
		out, err = scan(tx.QueryRow(ctx, `INSERT INTO stager.buildpacks (name, stack, position, sha256, size, blob_key, filename)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+columns, name, stack, position, a.SHA256, a.Size, a.BlobKey, a.Filename))
		return err
	})
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "23505" && pgErr.ConstraintName == "buildpacks_pkey" {
		return Buildpack{}, ErrExists
	}
	if err != nil {
		return Buildpack{}, fmt.Errorf("store: creating buildpack %s/%s: %w", stack, name, err)
	}
	return out, nil
}

// Update moves a buildpack to position (0: stays; beyond the end: last) and, when a is
// set, replaces its archive. ErrNotFound when there is none.
func (s *Store) Update(ctx context.Context, name, stack string, position int, a *Archive) (Buildpack, error) {
	var out Buildpack
	err := s.inStack(ctx, stack, func(tx pgx.Tx) error {
		cur, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM stager.buildpacks WHERE stack = $1 AND name = $2 FOR UPDATE`, stack, name))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		n, err := count(ctx, tx, stack)
		if err != nil {
			return err
		}
		switch {
		case position <= 0:
			position = cur.Position
		case position > n:
			position = n
		}
		if position < cur.Position {
			_, err = tx.Exec(ctx, `UPDATE stager.buildpacks SET position = position + 1 WHERE stack = $1 AND position >= $2 AND position < $3`, stack, position, cur.Position)
		} else if position > cur.Position {
			_, err = tx.Exec(ctx, `UPDATE stager.buildpacks SET position = position - 1 WHERE stack = $1 AND position > $2 AND position <= $3`, stack, cur.Position, position)
		}
		if err != nil {
			return err
		}
		if a == nil {
			a = &Archive{SHA256: cur.SHA256, Size: cur.Size, BlobKey: cur.BlobKey, Filename: cur.Filename}
		}
		out, err = scan(tx.QueryRow(ctx, `UPDATE stager.buildpacks SET position = $3, sha256 = $4, size = $5, blob_key = $6, filename = $7, updated_at = now()
WHERE stack = $1 AND name = $2 RETURNING `+columns, stack, name, position, a.SHA256, a.Size, a.BlobKey, a.Filename))
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return Buildpack{}, err
	}
	if err != nil {
		return Buildpack{}, fmt.Errorf("store: updating buildpack %s/%s: %w", stack, name, err)
	}
	return out, nil
}

// Delete removes a buildpack and closes the gap. ErrNotFound when there is none.
func (s *Store) Delete(ctx context.Context, name, stack string) error {
	err := s.inStack(ctx, stack, func(tx pgx.Tx) error {
		var pos int
		err := tx.QueryRow(ctx, `DELETE FROM stager.buildpacks WHERE stack = $1 AND name = $2 RETURNING position`, stack, name).Scan(&pos)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE stager.buildpacks SET position = position - 1 WHERE stack = $1 AND position > $2`, stack, pos)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("store: deleting buildpack %s/%s: %w", stack, name, err)
	}
	return nil
}
