package store

import (
	"context"
	"errors"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
)

const lockColumns = `key, owner, value, expires_at, modified_index`

func scanLock(row pgx.Row) (*modelsv1.Lock, error) {
	l := &modelsv1.Lock{}
	return l, row.Scan(&l.Key, &l.Owner, &l.Value, &l.ExpiresAt, &l.ModifiedIndex)
}

// AcquireLock takes a free or expired lock, or renews the owner's (new value and
// expiry, modified_index+1). A lock held by another owner is ErrLockCollision.
func (p *Postgres) AcquireLock(ctx context.Context, key, owner, value string, ttl time.Duration) (*modelsv1.Lock, error) {
	if key == "" || owner == "" {
		return nil, invalidRequest("lock key and owner are required")
	}
	if ttl <= 0 {
		return nil, invalidRequest("lock ttl must be positive")
	}
	var lock *modelsv1.Lock
	err := p.write(ctx, "acquire-lock", func(w *writeTx) error {
		expiresAt := expiry(w.now, ttl)
		var err error
		lock, err = scanLock(w.QueryRow(ctx, `INSERT INTO locks (key, owner, value, expires_at, modified_index)
VALUES ($1, $2, $3, $4, 1) ON CONFLICT (key) DO NOTHING RETURNING `+lockColumns, key, owner, value, expiresAt))
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		held, err := scanLock(w.QueryRow(ctx, `SELECT `+lockColumns+` FROM locks WHERE key = $1 FOR UPDATE`, key))
		if err != nil {
			return err
		}
		if held.Owner != owner && held.ExpiresAt > w.nowNano() {
			return models.NewError(models.ErrTypeLockCollision, "lock %q is held by %q", key, held.Owner)
		}
		lock, err = scanLock(w.QueryRow(ctx, `UPDATE locks SET owner = $2, value = $3, expires_at = $4,
    modified_index = modified_index + 1 WHERE key = $1 RETURNING `+lockColumns, key, owner, value, expiresAt))
		return err
	})
	return lock, err
}

// ReleaseLock frees a lock held by owner. An absent lock is ErrResourceNotFound; one
// held by another owner is ErrLockCollision.
func (p *Postgres) ReleaseLock(ctx context.Context, key, owner string) error {
	return p.write(ctx, "release-lock", func(w *writeTx) error {
		held, err := scanLock(w.QueryRow(ctx, `SELECT `+lockColumns+` FROM locks WHERE key = $1 FOR UPDATE`, key))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("lock %q not found", key)
		}
		if err != nil {
			return err
		}
		if held.Owner != owner {
			if held.ExpiresAt <= w.nowNano() {
				return notFound("lock %q not found", key)
			}
			return models.NewError(models.ErrTypeLockCollision, "lock %q is held by %q, not %q", key, held.Owner, owner)
		}
		_, err = w.Exec(ctx, `DELETE FROM locks WHERE key = $1`, key)
		return err
	})
}

// FetchLock returns a held lock; a free or expired one is ErrResourceNotFound.
func (p *Postgres) FetchLock(ctx context.Context, key string) (*modelsv1.Lock, error) {
	l, err := scanLock(p.pool.QueryRow(ctx, `SELECT `+lockColumns+` FROM locks WHERE key = $1 AND expires_at > $2`,
		key, p.now().UnixNano()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("lock %q not found", key)
	}
	return l, p.readError("fetch-lock", err)
}

// ListLocks returns the held (unexpired) locks ordered by key.
func (p *Postgres) ListLocks(ctx context.Context) ([]*modelsv1.Lock, error) {
	locks, err := queryAll(ctx, p.pool, scanLock,
		`SELECT `+lockColumns+` FROM locks WHERE expires_at > $1 ORDER BY key`, p.now().UnixNano())
	return locks, p.readError("list-locks", err)
}
