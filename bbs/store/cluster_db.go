package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

// forever is the expiry of a domain upserted with ttl 0.
const forever = math.MaxInt64

// freshDomainsSQL and liveCellsSQL select what has not expired at $1 (Unix nanoseconds);
// live cells come with their cordons.
const (
	freshDomainsSQL = `SELECT domain FROM domains WHERE expire_time > $1 ORDER BY domain`
	liveCellsSQL    = `SELECT ` + cellWithCordonColumns + cellsWithCordons + `WHERE c.expires_at > $1 ORDER BY c.cell_id`
)

// expiry is now+ttl in Unix nanoseconds, saturating instead of overflowing.
func expiry(now time.Time, ttl time.Duration) int64 {
	n := now.UnixNano()
	if ttl > 0 && n > math.MaxInt64-int64(ttl) {
		return forever
	}
	return n + int64(ttl)
}

// UpsertDomain makes the domain fresh for ttl; ttl 0 means forever.
func (p *Postgres) UpsertDomain(ctx context.Context, domain string, ttl time.Duration) error {
	if domain == "" {
		return invalidRequest("domain is required")
	}
	if ttl < 0 {
		return invalidRequest("domain ttl must not be negative")
	}
	return p.write(ctx, "upsert-domain", func(w *writeTx) error {
		expireTime := int64(forever)
		if ttl > 0 {
			expireTime = expiry(w.now, ttl)
		}
		_, err := w.Exec(ctx, `INSERT INTO domains (domain, expire_time) VALUES ($1, $2)
ON CONFLICT (domain) DO UPDATE SET expire_time = EXCLUDED.expire_time`, domain, expireTime)
		return err
	})
}

// ListFreshDomains returns the unexpired domains, sorted.
func (p *Postgres) ListFreshDomains(ctx context.Context) ([]string, error) {
	domains, err := queryAll(ctx, p.pool, scanDomain, freshDomainsSQL, p.now().UnixNano())
	return domains, p.readError("list-fresh-domains", err)
}

// HeartbeatCell records the presence (with expires_at set) until now+ttl.
func (p *Postgres) HeartbeatCell(ctx context.Context, presence *modelsv1.CellPresence, ttl time.Duration) error {
	if presence == nil || presence.GetCellId() == "" {
		return invalidRequest("cell presence with a cell id is required")
	}
	if err := p.actor.MayActForCell(presence.GetCellId()); err != nil {
		return err
	}
	if ttl <= 0 {
		return invalidRequest("cell presence ttl must be positive")
	}
	return p.write(ctx, "heartbeat-cell", func(w *writeTx) error {
		stored := proto.CloneOf(presence)
		stored.ExpiresAt = expiry(w.now, ttl)
		b, err := proto.Marshal(stored)
		if err != nil {
			return err
		}
		_, err = w.Exec(ctx, `INSERT INTO cells (cell_id, presence, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (cell_id) DO UPDATE SET presence = EXCLUDED.presence, expires_at = EXCLUDED.expires_at`,
			stored.CellId, b, stored.ExpiresAt)
		return err
	})
}

// RemoveCell deletes a cell's presence; removing an absent cell is not an error.
func (p *Postgres) RemoveCell(ctx context.Context, cellID string) error {
	if err := p.actor.MayActForCell(cellID); err != nil {
		return err
	}
	return p.write(ctx, "remove-cell", func(w *writeTx) error {
		_, err := w.Exec(ctx, `DELETE FROM cells WHERE cell_id = $1`, cellID)
		return err
	})
}

// GetCell returns a live cell with its cordon; an expired or absent one is ErrResourceNotFound.
func (p *Postgres) GetCell(ctx context.Context, cellID string) (*modelsv1.CellPresence, error) {
	c, err := scanCellWithCordon(p.pool.QueryRow(ctx, `SELECT `+cellWithCordonColumns+cellsWithCordons+
		`WHERE c.cell_id = $1 AND c.expires_at > $2`, cellID, p.now().UnixNano()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("cell %q not found", cellID)
	}
	return c, p.readError("get-cell", err)
}

// ListLiveCells returns the unexpired cells with their cordons, ordered by cell id.
func (p *Postgres) ListLiveCells(ctx context.Context) ([]*modelsv1.CellPresence, error) {
	cells, err := queryAll(ctx, p.pool, scanCellWithCordon, liveCellsSQL, p.now().UnixNano())
	return cells, p.readError("list-live-cells", err)
}

func scanDomain(row pgx.Row) (string, error) {
	var d string
	return d, row.Scan(&d)
}

// decodeCell decodes a stored cell presence.
func decodeCell(b []byte) (*modelsv1.CellPresence, error) {
	c := &modelsv1.CellPresence{}
	if err := proto.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("decoding cell presence: %w", err)
	}
	return c, nil
}
