package store

import (
	"context"
	"fmt"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	"google.golang.org/protobuf/proto"
)

// ConvergerLockKey is the key of the lock the active converger holds.
const ConvergerLockKey = "converger"

// ConvergerStateDB keeps the converger's maintenance flag and last pass report, one row
// shared by every BBS replica and converger instance.
type ConvergerStateDB interface {
	// GetConvergerStatus returns the pause flag, its reason and time, the last reported
	// pass and the owner of the unexpired converger lock ("" when none).
	GetConvergerStatus(ctx context.Context) (*bbsv1.GetConvergerStatusResponse, error)
	// SetConvergerPaused stores the flag and reason with changed_at = now and returns
	// the status after the change.
	SetConvergerPaused(ctx context.Context, paused bool, reason string) (*bbsv1.GetConvergerStatusResponse, error)
	// ReportConvergencePass stores the summary of the last pass; pass is required.
	ReportConvergencePass(ctx context.Context, pass *bbsv1.ConvergencePass) error
}

// convergerStatusSQL reads the status row with the owner of the converger lock if it
// has not expired at $1 (Unix nanoseconds).
const convergerStatusSQL = `SELECT s.paused, s.reason, s.changed_at, s.last_pass,
    COALESCE((SELECT l.owner FROM locks l WHERE l.key = '` + ConvergerLockKey + `' AND l.expires_at > $1), '')
FROM converger_state s WHERE s.id`

// convergerPausedSQL reads the pause flag; false if the row is missing.
const convergerPausedSQL = `SELECT COALESCE((SELECT paused FROM converger_state WHERE id), false)`

// GetConvergerStatus returns the converger's status (see ConvergerStateDB).
func (p *Postgres) GetConvergerStatus(ctx context.Context) (*bbsv1.GetConvergerStatusResponse, error) {
	status, err := readConvergerStatus(ctx, p.pool, p.now().UnixNano())
	return status, p.readError("get-converger-status", err)
}

// SetConvergerPaused pauses or resumes convergence (see ConvergerStateDB).
func (p *Postgres) SetConvergerPaused(ctx context.Context, paused bool, reason string) (*bbsv1.GetConvergerStatusResponse, error) {
	var status *bbsv1.GetConvergerStatusResponse
	err := p.write(ctx, "set-converger-paused", func(w *writeTx) error {
		if _, err := w.Exec(ctx, `UPDATE converger_state SET paused = $1, reason = $2, changed_at = $3 WHERE id`,
			paused, reason, w.nowNano()); err != nil {
			return err
		}
		var err error
		status, err = readConvergerStatus(ctx, w, w.nowNano())
		return err
	})
	return status, err
}

// ReportConvergencePass stores the last pass summary (see ConvergerStateDB).
func (p *Postgres) ReportConvergencePass(ctx context.Context, pass *bbsv1.ConvergencePass) error {
	if pass == nil {
		return invalidRequest("convergence pass is required")
	}
	b, err := proto.Marshal(pass)
	if err != nil {
		return invalidRequest("encoding the convergence pass: %v", err)
	}
	return p.write(ctx, "report-convergence-pass", func(w *writeTx) error {
		_, err := w.Exec(ctx, `UPDATE converger_state SET last_pass = $1 WHERE id`, b)
		return err
	})
}

// readConvergerStatus reads the status row through q at now (Unix nanoseconds).
func readConvergerStatus(ctx context.Context, q querier, now int64) (*bbsv1.GetConvergerStatusResponse, error) {
	status := &bbsv1.GetConvergerStatusResponse{}
	var lastPass []byte
	if err := q.QueryRow(ctx, convergerStatusSQL, now).Scan(&status.Paused, &status.PausedReason,
		&status.ChangedAt, &lastPass, &status.LockOwner); err != nil {
		return nil, err
	}
	if lastPass != nil {
		status.LastPass = &bbsv1.ConvergencePass{}
		if err := proto.Unmarshal(lastPass, status.LastPass); err != nil {
			return nil, fmt.Errorf("decoding the last convergence pass: %w", err)
		}
	}
	return status, nil
}
