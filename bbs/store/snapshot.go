package store

import (
	"context"
	"errors"
	"fmt"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protowire"
)

// SnapshotBatchSize is the most scheduling infos, actual LRPs or tasks one snapshot
// message carries.
const SnapshotBatchSize = 1000

// snapshotTxOptions make every query of a snapshot see the same committed state.
var snapshotTxOptions = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// callbackURLField is the field number of TaskDefinition.completion_callback_url.
var callbackURLField = (&modelsv1.TaskDefinition{}).ProtoReflect().Descriptor().
	Fields().ByName("completion_callback_url").Number()

// emitError carries an error of the caller's emit function through the snapshot.
type emitError struct{ err error }

func (e *emitError) Error() string { return "emitting a snapshot message: " + e.err.Error() }
func (e *emitError) Unwrap() error { return e.err }

// Snapshot streams one consistent view of the store to emit (see ConvergenceDB).
func (p *Postgres) Snapshot(ctx context.Context, emit func(*bbsv1.SnapshotResponse) error) error {
	err := p.snapshot(ctx, func(m *bbsv1.SnapshotResponse) error {
		if err := emit(m); err != nil {
			return &emitError{err: err}
		}
		return nil
	})
	var e *emitError
	if errors.As(err, &e) {
		return e.err
	}
	return p.readError("snapshot", err)
}

func (p *Postgres) snapshot(ctx context.Context, emit func(*bbsv1.SnapshotResponse) error) error {
	tx, err := p.pool.BeginTx(ctx, snapshotTxOptions)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	// The transaction's snapshot is taken by its first query, just after this time.
	now := p.now().UnixNano()
	first := &bbsv1.SnapshotResponse{TakenAt: now}
	if err := tx.QueryRow(ctx, convergerPausedSQL).Scan(&first.Paused); err != nil {
		return err
	}
	if first.FreshDomains, err = queryAll(ctx, tx, scanDomain, freshDomainsSQL, now); err != nil {
		return err
	}
	if first.Cells, err = queryAll(ctx, tx, scanCellWithCordon, liveCellsSQL, now); err != nil {
		return err
	}
	if err := emit(first); err != nil {
		return err
	}

	err = streamBatches(ctx, tx, func(r pgx.Row) (*modelsv1.DesiredLRPSchedulingInfo, error) { return scanSchedulingInfo(r) },
		func(b []*modelsv1.DesiredLRPSchedulingInfo) error {
			return emit(&bbsv1.SnapshotResponse{SchedulingInfos: b})
		},
		`SELECT `+schedulingColumns+` FROM desired_lrps ORDER BY process_guid`)
	if err != nil {
		return err
	}
	err = streamBatches(ctx, tx, scanActualLRP,
		func(b []*modelsv1.ActualLRP) error { return emit(&bbsv1.SnapshotResponse{ActualLrps: b}) },
		`SELECT `+actualColumns+` FROM actual_lrps ORDER BY process_guid, instance_index, presence`)
	if err != nil {
		return err
	}
	err = streamBatches(ctx, tx, p.scanSnapshotTask,
		func(b []*modelsv1.Task) error { return emit(&bbsv1.SnapshotResponse{Tasks: b}) },
		`SELECT `+taskColumns+` FROM tasks ORDER BY guid`)
	if err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// streamBatches runs a query and hands its rows to send in slices of at most
// SnapshotBatchSize, reading rows from the connection only as batches fill; send
// receives a new slice each time and may keep it.
func streamBatches[T any](ctx context.Context, q querier, scan func(pgx.Row) (T, error), send func([]T) error, sql string, args ...any) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	batch := make([]T, 0, SnapshotBatchSize)
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return err
		}
		batch = append(batch, v)
		if len(batch) == SnapshotBatchSize {
			if err := send(batch); err != nil {
				return err
			}
			batch = make([]T, 0, SnapshotBatchSize)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return send(batch)
	}
	return nil
}

// scanSnapshotTask reads taskColumns into a task whose definition holds only the
// completion callback URL (nil when there is none). The URL lives only in the encrypted
// definition, so the definition is decrypted, but only that field is decoded.
func (p *Postgres) scanSnapshotTask(row pgx.Row) (*modelsv1.Task, error) {
	t, plain, err := p.scanTaskDecrypted(row)
	if err != nil {
		return nil, err
	}
	url, err := callbackURL(plain)
	if err != nil {
		return nil, fmt.Errorf("definition of task %q: %w", t.TaskGuid, err)
	}
	if url != "" {
		t.TaskDefinition = &modelsv1.TaskDefinition{CompletionCallbackUrl: url}
	}
	return t, nil
}

// callbackURL finds the completion callback URL in a marshalled TaskDefinition without
// decoding the other fields; as in proto decoding, the last occurrence wins.
func callbackURL(def []byte) (string, error) {
	url := ""
	for len(def) > 0 {
		num, typ, n := protowire.ConsumeTag(def)
		if n < 0 {
			return "", fmt.Errorf("decoding the completion callback url: %w", protowire.ParseError(n))
		}
		def = def[n:]
		if num == callbackURLField && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(def)
			if m < 0 {
				return "", fmt.Errorf("decoding the completion callback url: %w", protowire.ParseError(m))
			}
			url = string(v)
			def = def[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, def)
		if m < 0 {
			return "", fmt.Errorf("decoding the completion callback url: %w", protowire.ParseError(m))
		}
		def = def[m:]
	}
	return url, nil
}
