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
