package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// maxAttempts is one try plus three retries on deadlock, serialization failure or a
// connection lost before commit.
const maxAttempts = 4

// errRetryTransaction asks write to run the transaction again, e.g. after an insert
// lost a race with a concurrent insert of the same key.
var errRetryTransaction = errors.New("transaction must be retried")

// querier is what reads need from a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// writeTx is one attempt of a write transaction: the transaction, the time the attempt
// started, and the events it appends just before commit.
type writeTx struct {
	pgx.Tx
	p      *Postgres
	now    time.Time
	events []*modelsv1.Event
}

// emit queues events to append in this transaction; nil events are ignored.
func (w *writeTx) emit(events ...*modelsv1.Event) {
	for _, e := range events {
		if e != nil {
			w.events = append(w.events, e)
		}
	}
}

// nowNano is the attempt's time in Unix nanoseconds.
func (w *writeTx) nowNano() int64 { return w.now.UnixNano() }

// commitError marks a failed COMMIT, whose outcome may be unknown.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// write runs fn in one transaction, appends the events fn emitted as its last step and
// commits. The whole transaction is retried on deadlocks, serialization failures and
// connections lost before commit. fn must only have effects through w, since it may run
// more than once. Errors come back as *models.Error where a type is known.
func (p *Postgres) write(ctx context.Context, op string, fn func(w *writeTx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = p.writeOnce(ctx, fn)
		if err == nil || attempt == maxAttempts || !retriable(err) || ctx.Err() != nil {
			break
		}
		p.logger.Info("retrying-transaction", "op", op, "attempt", attempt, "error", err.Error())
		if sleepErr := sleep(ctx, time.Duration(attempt)*25*time.Millisecond); sleepErr != nil {
			break
		}
	}
	if err != nil && !isTypedOrCancelled(err) {
		p.logger.Error("failed-transaction", "op", op, "error", err.Error())
	}
	return mapError(op, err)
}

// isTypedOrCancelled reports errors that are the caller's business rather than failures
// worth logging: typed BBS errors and ended contexts.
func isTypedOrCancelled(err error) bool {
	var modelErr *models.Error
	return errors.As(err, &modelErr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (p *Postgres) writeOnce(ctx context.Context, fn func(w *writeTx) error) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	w := &writeTx{Tx: tx, p: p, now: p.now()}
	if err := fn(w); err != nil {
		return err
	}
	if err := w.appendEvents(ctx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return &commitError{err: err}
	}
	return nil
}

// retriable reports whether running the whole transaction again is safe and useful.
func retriable(err error) bool {
	if isTypedOrCancelled(err) {
		return false
	}
	var commitErr *commitError
	if errors.As(err, &commitErr) {
		// After a COMMIT was sent only a refusal by the server is known not to have applied.
		return pgCode(err) == pgerrcode.SerializationFailure || pgCode(err) == pgerrcode.DeadlockDetected || pgconn.SafeToRetry(err)
	}
	if errors.Is(err, errRetryTransaction) {
		return true
	}
	switch pgCode(err) {
	case pgerrcode.SerializationFailure, pgerrcode.DeadlockDetected:
		return true
	}
	return isConnectionLoss(err)
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// isConnectionLoss reports errors that mean the connection broke rather than that the
// server refused a statement.
func isConnectionLoss(err error) bool {
	if pgconn.SafeToRetry(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == pgerrcode.AdminShutdown || pgerrcode.IsConnectionException(pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, net.ErrClosed)
}

// mapError turns driver errors into typed BBS errors where a type applies.
func mapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var modelErr *models.Error
	if errors.As(err, &modelErr) {
		return modelErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgerrcode.UniqueViolation:
			return models.NewError(models.ErrTypeResourceExists, "%s: %s", op, pgErr.Detail)
		case pgerrcode.DeadlockDetected, pgerrcode.SerializationFailure:
			return models.NewError(models.ErrTypeResourceConflict, "%s: concurrent writes kept conflicting: %s", op, pgErr.Message)
		}
		if refusesValue(pgErr.Code) {
			return models.NewError(models.ErrTypeInvalidRequest, "%s: the database refused a value of the request: %s", op, pgErr.Message)
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return models.NewError(models.ErrTypeResourceNotFound, "%s: not found", op)
	}
	if isConnectionLoss(err) {
		return unavailable(op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// refusesValue reports the Postgres errors that a value a client sent causes, rather
// than the server: data exceptions (class 22: text that is not valid in the encoding,
// such as NUL, values too long or out of range) and program limits (class 54, such as an
// index entry over its maximum size). Validation refuses such values first; these keep
// any it misses a client error instead of an internal one.
func refusesValue(code string) bool {
	return pgerrcode.IsDataException(code) || pgerrcode.IsProgramLimitExceeded(code)
}

func unavailable(op string, err error) error {
	return models.NewError(models.ErrTypeUnavailable, "%s: database unavailable: %v", op, err)
}

func notFound(format string, args ...any) error {
	return models.NewError(models.ErrTypeResourceNotFound, format, args...)
}

func invalidRequest(format string, args ...any) error {
	return models.NewError(models.ErrTypeInvalidRequest, format, args...)
}

func isUniqueViolation(err error) bool { return pgCode(err) == pgerrcode.UniqueViolation }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// readError logs and maps the error of a read.
func (p *Postgres) readError(op string, err error) error {
	if err != nil && !isTypedOrCancelled(err) {
		p.logger.Error("failed-query", "op", op, "error", err.Error())
	}
	return mapError(op, err)
}
