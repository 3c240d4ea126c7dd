package store_test

import (
	"context"
	"errors"
	"testing"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store/storetest"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

func TestWriteRetryPolicy(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	deadlock := &pgconn.PgError{Code: pgerrcode.DeadlockDetected, Message: "deadlock detected"}
	serialization := &pgconn.PgError{Code: pgerrcode.SerializationFailure, Message: "could not serialize access"}

	tests := []struct {
		name         string
		failAttempts int // attempts that fail with err
		err          error
		wantAttempts int
		wantType     models.ErrorType // "" = success; "?" = an untyped error
	}{
		{"deadlock then success", 2, deadlock, 3, ""},
		{"serialization failure then success", 1, serialization, 2, ""},
		{"gives up after four attempts", 10, deadlock, 4, models.ErrTypeResourceConflict},
		{"typed errors are not retried", 10, models.ErrResourceNotFound, 1, models.ErrTypeResourceNotFound},
		{"unique violation becomes ResourceExists", 10, &pgconn.PgError{Code: pgerrcode.UniqueViolation}, 1, models.ErrTypeResourceExists},
		{"other errors are not retried", 10, errors.New("boom"), 1, "?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempts := 0
			err := s.WriteForTest(ctx, func(attempt int, tx pgx.Tx) error {
				attempts = attempt
				if attempt <= tt.failAttempts {
					return tt.err
				}
				_, err := tx.Exec(ctx, `INSERT INTO configurations (id, value) VALUES ($1, 'x')`, tt.name)
				return err
			})
			require.Equal(t, tt.wantAttempts, attempts)
			switch tt.wantType {
			case "":
				require.NoError(t, err)
			case "?":
				require.Error(t, err)
				require.Equal(t, models.ErrTypeUnknown, models.FromError(err).Type)
			default:
				requireErrorType(t, err, tt.wantType)
			}
		})
	}
}

func TestWriteRetriesAfterConnectionLoss(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	attempts := 0
	err := s.WriteForTest(ctx, func(attempt int, tx pgx.Tx) error {
		attempts = attempt
		if _, err := tx.Exec(ctx, `INSERT INTO configurations (id, value) VALUES ('conn-loss', 'x')`); err != nil {
			return err
		}
		if attempt == 1 {
			// The server ends this session mid-transaction, before commit.
			_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
			return err
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, attempts)
}

func TestWriteStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx, cancel := context.WithCancel(testContext(t))
	attempts := 0
	err := s.WriteForTest(ctx, func(attempt int, tx pgx.Tx) error {
		attempts = attempt
		cancel()
		return &pgconn.PgError{Code: pgerrcode.DeadlockDetected}
	})
	require.Error(t, err)
	require.Equal(t, 1, attempts)
}
