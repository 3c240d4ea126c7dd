package store

import (
	"context"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
)

// CordonDB keeps operator cordons by cell id, independent of cell presences: a cordon
// outlives presence renewals, expiry and rep restarts. Cell reads (GetCell,
// ListLiveCells, Snapshot) report it in CellPresence.cordoned and cordon_reason.
type CordonDB interface {
	// CordonCell cordons a cell, or updates the reason and time of its cordon.
	CordonCell(ctx context.Context, cellID, reason string) error
	// UncordonCell lifts a cordon and says whether there was one.
	UncordonCell(ctx context.Context, cellID string) (wasCordoned bool, error error)
	// ListUnplaced returns the work an uncordoned cell may now take: up to limit
	// ORDINARY UNCLAIMED instances that carry a placement error and up to limit PENDING
	// tasks without a cell (with their definitions), oldest first.
	ListUnplaced(ctx context.Context, limit int) ([]*modelsv1.ActualLRP, []*modelsv1.Task, error)
}

// cellWithCordonColumns are the columns scanCellWithCordon reads, from cells c left
// joined with cell_cordons cc.
const cellWithCordonColumns = `c.presence, cc.cell_id IS NOT NULL, COALESCE(cc.reason, '')`

// cellsWithCordons is the FROM clause that goes with cellWithCordonColumns.
const cellsWithCordons = ` FROM cells c LEFT JOIN cell_cordons cc ON cc.cell_id = c.cell_id `

// CordonCell cordons a cell (see CordonDB).
func (p *Postgres) CordonCell(ctx context.Context, cellID, reason string) error {
	if cellID == "" {
		return invalidRequest("invalid field cell_id: required")
	}
	return p.write(ctx, "cordon-cell", func(w *writeTx) error {
		_, err := w.Exec(ctx, `INSERT INTO cell_cordons (cell_id, reason, cordoned_at) VALUES ($1, $2, $3)
ON CONFLICT (cell_id) DO UPDATE SET reason = EXCLUDED.reason, cordoned_at = EXCLUDED.cordoned_at`,
			cellID, reason, w.nowNano())
		return err
	})
}

// UncordonCell lifts a cordon (see CordonDB).
func (p *Postgres) UncordonCell(ctx context.Context, cellID string) (bool, error) {
	if cellID == "" {
		return false, invalidRequest("invalid field cell_id: required")
	}
	wasCordoned := false
	err := p.write(ctx, "uncordon-cell", func(w *writeTx) error {
		tag, err := w.Exec(ctx, `DELETE FROM cell_cordons WHERE cell_id = $1`, cellID)
		wasCordoned = tag.RowsAffected() > 0
		return err
	})
	return wasCordoned, err
}

// ListUnplaced lists the unplaced work (see CordonDB).
func (p *Postgres) ListUnplaced(ctx context.Context, limit int) ([]*modelsv1.ActualLRP, []*modelsv1.Task, error) {
	if limit <= 0 {
		return nil, nil, invalidRequest("invalid limit %d: must be positive", limit)
	}
	if p.actor.IsCell() {
		return nil, nil, nil // a cell reads only what is placed on it
	}
	lrps, err := queryAll(ctx, p.pool, scanActualLRP, `SELECT `+actualColumns+` FROM actual_lrps
WHERE state = $1 AND presence = $2 AND placement_error <> ''
ORDER BY since, process_guid, instance_index LIMIT $3`,
		int16(modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED),
		int16(modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY), limit)
	if err != nil {
		return nil, nil, p.readError("list-unplaced-actual-lrps", err)
	}
	tasks, err := queryAll(ctx, p.pool, p.scanTask, `SELECT `+taskColumns+` FROM tasks
WHERE state = $1 AND cell_id = '' ORDER BY created_at, guid LIMIT $2`,
		int16(modelsv1.TaskState_TASK_STATE_PENDING), limit)
	if err != nil {
		return nil, nil, p.readError("list-unplaced-tasks", err)
	}
	return lrps, tasks, nil
}

// scanCellWithCordon reads cellWithCordonColumns: the stored presence with the cordon
// fields set from cell_cordons (what a rep sent in them is ignored).
func scanCellWithCordon(row pgx.Row) (*modelsv1.CellPresence, error) {
	var b []byte
	var cordoned bool
	var reason string
	if err := row.Scan(&b, &cordoned, &reason); err != nil {
		return nil, err
	}
	c, err := decodeCell(b)
	if err != nil {
		return nil, err
	}
	c.Cordoned, c.CordonReason = cordoned, reason
	return c, nil
}
