package store

import (
	"context"
	"errors"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

// desiredFilterSQL is the WHERE clause of a DesiredLRPFilter ($1 domain, $2 guids).
const desiredFilterSQL = ` WHERE ($1 = '' OR domain = $1) AND (cardinality($2::text[]) = 0 OR process_guid = ANY($2))
ORDER BY process_guid`

// DesireLRP inserts the LRP with a fresh modification tag and one UNCLAIMED row per
// index, and emits desired_lrp_created plus an instance-created event per row. A taken
// process guid is ErrResourceExists. The LRP must already be validated.
func (p *Postgres) DesireLRP(ctx context.Context, lrp *modelsv1.DesiredLRP) (*DesiredLRPChange, error) {
	if lrp == nil {
		return nil, invalidRequest("desired lrp is required")
	}
	var change *DesiredLRPChange
	err := p.write(ctx, "desire-lrp", func(w *writeTx) error {
		stored := proto.CloneOf(lrp)
		stored.ModificationTag = &modelsv1.ModificationTag{Epoch: uuid.NewString()}
		if stored.CreatedAt == 0 {
			stored.CreatedAt = w.nowNano()
		}
		args, err := p.desiredArgs(stored)
		if err != nil {
			return err
		}
		if _, err := w.Exec(ctx, insertDesiredSQL, args...); err != nil {
			if isUniqueViolation(err) {
				return models.NewError(models.ErrTypeResourceExists, "desired lrp %q already exists", lrp.GetProcessGuid())
			}
			return err
		}
		w.emit(models.DesiredLRPCreatedEvent(stored))
		created, err := w.createUnclaimed(ctx, stored, 0, stored.GetInstances())
		if err != nil {
			return err
		}
		change = &DesiredLRPChange{After: stored, Created: created}
		return nil
	})
	return change, err
}

// UpdateDesiredLRP applies a validated update and emits desired_lrp_changed. Scaling up
// creates UNCLAIMED rows for the new indices; scaling down deletes UNCLAIMED and CRASHED
// extras (emitting removed events) and returns CLAIMED and RUNNING extras in ToStop.
func (p *Postgres) UpdateDesiredLRP(ctx context.Context, processGuid string, update *modelsv1.DesiredLRPUpdate) (*DesiredLRPChange, error) {
	if update == nil {
		return nil, invalidRequest("desired lrp update is required")
	}
	var change *DesiredLRPChange
	err := p.write(ctx, "update-desired-lrp", func(w *writeTx) error {
		before, err := p.lockDesiredLRP(ctx, w, processGuid)
		if err != nil {
			return err
		}
		after := models.ApplyDesiredLRPUpdate(before, update)
		if after == nil {
			return invalidRequest("update of desired lrp %q produced nothing", processGuid)
		}
		args, err := p.desiredArgs(after)
		if err != nil {
			return err
		}
		if _, err := w.Exec(ctx, updateDesiredSQL, args...); err != nil {
			return err
		}
		w.emit(models.DesiredLRPChangedEvent(before, after))
		change = &DesiredLRPChange{Before: before, After: after}
		switch {
		case after.GetInstances() > before.GetInstances():
			change.Created, err = w.createUnclaimed(ctx, after, before.GetInstances(), after.GetInstances())
		case after.GetInstances() < before.GetInstances():
			change.ToStop, err = w.retireFrom(ctx, processGuid, after.GetInstances())
		}
		return err
	})
	return change, err
}

// RemoveDesiredLRP deletes the LRP and emits desired_lrp_removed; its unplaced rows are
// deleted (with removed events) and its placed, non-evacuating rows come back in ToStop.
func (p *Postgres) RemoveDesiredLRP(ctx context.Context, processGuid string) (*DesiredLRPChange, error) {
	var change *DesiredLRPChange
	err := p.write(ctx, "remove-desired-lrp", func(w *writeTx) error {
		before, err := p.lockDesiredLRP(ctx, w, processGuid)
		if err != nil {
			return err
		}
		if _, err := w.Exec(ctx, `DELETE FROM desired_lrps WHERE process_guid = $1`, processGuid); err != nil {
			return err
		}
		w.emit(models.DesiredLRPRemovedEvent(before))
		toStop, err := w.retireFrom(ctx, processGuid, 0)
		change = &DesiredLRPChange{Before: before, ToStop: toStop}
		return err
	})
	return change, err
}

// lockDesiredLRP reads a DesiredLRP FOR UPDATE.
func (p *Postgres) lockDesiredLRP(ctx context.Context, w *writeTx, processGuid string) (*modelsv1.DesiredLRP, error) {
	lrp, err := p.scanDesiredLRP(w.QueryRow(ctx,
		`SELECT `+desiredColumns+` FROM desired_lrps WHERE process_guid = $1 FOR UPDATE`, processGuid))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("desired lrp %q not found", processGuid)
	}
	return lrp, err
}

// GetDesiredLRP returns the full DesiredLRP, run info decrypted.
func (p *Postgres) GetDesiredLRP(ctx context.Context, processGuid string) (*modelsv1.DesiredLRP, error) {
	if err := p.mayReadDesired(ctx, processGuid); err != nil {
		return nil, err
	}
	lrp, err := p.scanDesiredLRP(p.pool.QueryRow(ctx,
		`SELECT `+desiredColumns+` FROM desired_lrps WHERE process_guid = $1`, processGuid))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("desired lrp %q not found", processGuid)
	}
	return lrp, p.readError("get-desired-lrp", err)
}

// mayReadDesired lets a cell read the definition of a DesiredLRP only while one of its
// instances (any presence) is on that cell: the rep fetches it after claiming.
func (p *Postgres) mayReadDesired(ctx context.Context, processGuid string) error {
	if !p.actor.IsCell() {
		return nil
	}
	var placed bool
	err := p.pool.QueryRow(ctx, `SELECT $2 <> '' AND EXISTS (SELECT 1 FROM actual_lrps WHERE process_guid = $1 AND cell_id = $2)`,
		processGuid, p.actor.Cell()).Scan(&placed)
	if err != nil {
		return p.readError("get-desired-lrp", err)
	}
	if !placed {
		return models.NewError(models.ErrTypeUnauthorized,
			"cell %q may not read desired lrp %q: none of its instances is on that cell", p.actor.Cell(), processGuid)
	}
	return nil
}

// ListDesiredLRPs returns full DesiredLRPs ordered by process guid.
func (p *Postgres) ListDesiredLRPs(ctx context.Context, f DesiredLRPFilter) ([]*modelsv1.DesiredLRP, error) {
	lrps, err := queryAll(ctx, p.pool, p.scanDesiredLRP,
		`SELECT `+desiredColumns+` FROM desired_lrps`+desiredFilterSQL, f.Domain, nonNil(f.ProcessGuids))
	return lrps, p.readError("list-desired-lrps", err)
}

// ListSchedulingInfos returns the scheduling views ordered by process guid; it never
// reads or decrypts run info.
func (p *Postgres) ListSchedulingInfos(ctx context.Context, f DesiredLRPFilter) ([]*modelsv1.DesiredLRPSchedulingInfo, error) {
	infos, err := queryAll(ctx, p.pool, func(r pgx.Row) (*modelsv1.DesiredLRPSchedulingInfo, error) { return scanSchedulingInfo(r) },
		`SELECT `+schedulingColumns+` FROM desired_lrps`+desiredFilterSQL, f.Domain, nonNil(f.ProcessGuids))
	return infos, p.readError("list-scheduling-infos", err)
}

// ListRoutingInfos returns the routing views of the given LRPs (all when empty) ordered
// by process guid; it never reads run info.
func (p *Postgres) ListRoutingInfos(ctx context.Context, processGuids []string) ([]*modelsv1.DesiredLRPRoutingInfo, error) {
	infos, err := queryAll(ctx, p.pool, scanRoutingInfo,
		`SELECT `+routingColumns+` FROM desired_lrps`+desiredFilterSQL, "", nonNil(processGuids))
	return infos, p.readError("list-routing-infos", err)
}
