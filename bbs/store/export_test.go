package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// WriteForTest runs fn as a write transaction with the store's retry policy; fn gets
// the attempt number (from 1) and the transaction.
func (p *Postgres) WriteForTest(ctx context.Context, fn func(attempt int, tx pgx.Tx) error) error {
	attempt := 0
	return p.write(ctx, "test-write", func(w *writeTx) error {
		attempt++
		return fn(attempt, w.Tx)
	})
}
