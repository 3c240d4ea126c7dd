package store

import (
	"context"
	"errors"
	"maps"
	"slices"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

const (
	stateUnclaimed   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED
	stateClaimed     = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	stateRunning     = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	stateCrashed     = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED
	presenceOrdinary = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY
)

// ListActualLRPs returns matching rows (every presence) ordered by process guid, index
// and presence, in one query without decrypting anything.
func (p *Postgres) ListActualLRPs(ctx context.Context, f ActualLRPFilter) ([]*modelsv1.ActualLRP, error) {
	if p.actor.IsCell() {
		if p.actor.Cell() == "" {
			return nil, nil // a cell without an id holds nothing
		}
		f.CellID = p.actor.Cell()
	}
	lrps, err := queryAll(ctx, p.pool, scanActualLRP, `SELECT `+actualColumns+` FROM actual_lrps
WHERE ($1 = '' OR domain = $1) AND ($2 = '' OR cell_id = $2) AND ($3 = '' OR process_guid = $3)
  AND ($4::int IS NULL OR instance_index = $4)
ORDER BY process_guid, instance_index, presence`, f.Domain, f.CellID, f.ProcessGuid, f.Index)
	return lrps, p.readError("list-actual-lrps", err)
}

// GetActualLRP returns one row.
func (p *Postgres) GetActualLRP(ctx context.Context, processGuid string, index int32, presence modelsv1.ActualLRPPresence) (*modelsv1.ActualLRP, error) {
	a, err := scanActualLRP(p.pool.QueryRow(ctx, `SELECT `+actualColumns+` FROM actual_lrps
WHERE process_guid = $1 AND instance_index = $2 AND presence = $3`, processGuid, index, int16(presence)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("actual lrp %s/%d (%s) not found", processGuid, index, presence)
	}
	return a, p.readError("get-actual-lrp", err)
}

// ClaimActualLRP moves the ORDINARY row to CLAIMED by the given instance. Re-claiming with
// the same key, or claiming as the instance of a SUSPECT row, is a successful no-op.
func (p *Postgres) ClaimActualLRP(ctx context.Context, processGuid string, index int32, ik *modelsv1.ActualLRPInstanceKey) (*ActualLRPChange, error) {
	if ik == nil {
		return nil, invalidRequest("actual lrp instance key is required")
	}
	if err := p.actor.MayUseInstanceKey(ik); err != nil {
		return nil, err
	}
	var change *ActualLRPChange
	err := p.write(ctx, "claim-actual-lrp", func(w *writeTx) error {
		rows, err := w.lockIndex(ctx, processGuid, index)
		if err != nil {
			return err
		}
		if s := rows.suspect; s != nil && sameInstance(s, ik) {
			change = &ActualLRPChange{Before: s, After: s}
			return nil
		}
		before := rows.ordinary
		if before == nil {
			return notFound("actual lrp %s/%d not found", processGuid, index)
		}
		if err := p.actor.MayChangeActualLRP(before, true); err != nil {
			return err
		}
		if before.State == stateClaimed && sameInstance(before, ik) {
			change = &ActualLRPChange{Before: before, After: before}
			return nil
		}
		if err := models.ActualLRPTransition(before, stateClaimed, ik); err != nil {
			return err
		}
		after := w.next(before, stateClaimed)
		after.InstanceGuid, after.CellId = ik.GetInstanceGuid(), ik.GetCellId()
		after.PlacementError = ""
		clearPlacement(after)
		change, err = w.saveActual(ctx, before, after)
		return err
	})
	return change, err
}

// StartActualLRP moves the ORDINARY row to RUNNING (creating it RUNNING if missing) and
// removes the EVACUATING and SUSPECT rows of that index. A start that changes nothing
// is a no-op without events; a start from the instance of a SUSPECT row is ignored.
func (p *Postgres) StartActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, net *modelsv1.ActualLRPNetInfo, opts StartOptions) (*ActualLRPChange, error) {
	if key == nil || ik == nil || net == nil {
		return nil, invalidRequest("actual lrp key, instance key and net info are required")
	}
	if err := p.actor.MayUseInstanceKey(ik); err != nil {
		return nil, err
	}
	var change *ActualLRPChange
	err := p.write(ctx, "start-actual-lrp", func(w *writeTx) error {
		rows, err := w.lockIndex(ctx, key.GetProcessGuid(), key.GetIndex())
		if err != nil {
			return err
		}
		if s := rows.suspect; s != nil && sameInstance(s, ik) {
			change = &ActualLRPChange{Before: s, After: s}
			return nil
		}
		if err := p.actor.MayChangeActualLRP(rows.ordinary, true); err != nil {
			return err
		}
		if change, err = w.startOrdinary(ctx, rows.ordinary, key, ik, net, opts); err != nil {
			return err
		}
		for _, extra := range []*modelsv1.ActualLRP{rows.evacuating, rows.suspect} {
			if extra != nil {
				if err := w.deleteActual(ctx, extra); err != nil {
					return err
				}
				w.emit(models.ActualLRPEvents(extra, nil)...)
			}
		}
		return nil
	})
	return change, err
}

func (w *writeTx) startOrdinary(ctx context.Context, before *modelsv1.ActualLRP, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, net *modelsv1.ActualLRPNetInfo, opts StartOptions) (*ActualLRPChange, error) {
	var after *modelsv1.ActualLRP
	if before == nil {
		after = &modelsv1.ActualLRP{
			ProcessGuid: key.GetProcessGuid(), Index: key.GetIndex(), Domain: key.GetDomain(),
			Presence: presenceOrdinary, State: stateRunning, Since: w.nowNano(),
			ModificationTag: &modelsv1.ModificationTag{Epoch: uuid.NewString()},
		}
	} else {
		after = proto.CloneOf(before)
		after.State = stateRunning
	}
	applyStart(after, ik, net, opts)
	if before == nil {
		if err := w.insertActual(ctx, after); err != nil {
			return nil, err
		}
		w.emit(models.ActualLRPEvents(nil, after)...)
		return &ActualLRPChange{After: after}, nil
	}
	if proto.Equal(before, after) {
		return &ActualLRPChange{Before: before, After: before}, nil
	}
	if err := models.ActualLRPTransition(before, stateRunning, ik); err != nil {
		return nil, err
	}
	bump(after)
	if before.State != stateRunning {
		after.Since = w.nowNano()
	}
	return w.saveActual(ctx, before, after)
}

// applyStart sets what a start (or an evacuating instance's report) says about a
// running instance: its instance key, net info and start options; the placement error
// is cleared.
func applyStart(a *modelsv1.ActualLRP, ik *modelsv1.ActualLRPInstanceKey, net *modelsv1.ActualLRPNetInfo, opts StartOptions) {
	a.InstanceGuid, a.CellId = ik.GetInstanceGuid(), ik.GetCellId()
	a.NetInfo = proto.CloneOf(net)
	a.PlacementError = ""
	a.InternalRoutes = nilIfEmpty(slices.Clone(opts.InternalRoutes))
	a.MetricTags = maps.Clone(opts.MetricTags)
	if len(a.MetricTags) == 0 {
		a.MetricTags = nil
	}
	a.Routable = opts.Routable
	a.AvailabilityZone = opts.AvailabilityZone
}

// CrashActualLRP records a crash of the instance: a new crash count from the restart
// policy, then CRASHED, or UNCLAIMED at once when the policy restarts immediately
// (Restart). It emits actual_lrp_crashed plus the instance events. A crash reported by
// the instance of a SUSPECT row deletes that row instead.
func (p *Postgres) CrashActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, reason string) (*CrashResult, error) {
	if key == nil || ik == nil {
		return nil, invalidRequest("actual lrp key and instance key are required")
	}
	if err := p.actor.MayUseInstanceKey(ik); err != nil {
		return nil, err
	}
	var result *CrashResult
	err := p.write(ctx, "crash-actual-lrp", func(w *writeTx) error {
		rows, err := w.lockIndex(ctx, key.GetProcessGuid(), key.GetIndex())
		if err != nil {
			return err
		}
		if s := rows.suspect; s != nil && sameInstance(s, ik) {
			if err := w.deleteActual(ctx, s); err != nil {
				return err
			}
			w.emit(models.ActualLRPEvents(s, nil)...)
			result = &CrashResult{ActualLRPChange: ActualLRPChange{Before: s}}
			return nil
		}
		if rows.ordinary == nil {
			return notFound("actual lrp %s/%d not found", key.GetProcessGuid(), key.GetIndex())
		}
		if err := p.actor.MayChangeActualLRP(rows.ordinary, false); err != nil {
			return err
		}
		result, err = w.crashOrdinary(ctx, rows.ordinary, ik, reason)
		return err
	})
	return result, err
}

// crashOrdinary runs the crash logic on an ORDINARY row reported crashed by instance ik:
// the restart policy's crash count, then CRASHED or (immediate restart) UNCLAIMED,
// with actual_lrp_crashed and the instance events. A row whose index is no longer
// desired (the DesiredLRP was removed or scaled down while the instance ran, and its
// stop raced the crash) has nothing to restart: it is deleted.
func (w *writeTx) crashOrdinary(ctx context.Context, before *modelsv1.ActualLRP, ik *modelsv1.ActualLRPInstanceKey, reason string) (*CrashResult, error) {
	if err := models.ActualLRPTransition(before, stateCrashed, ik); err != nil {
		return nil, err
	}
	desired, err := w.indexDesired(ctx, before.GetProcessGuid(), before.GetIndex())
	if err != nil {
		return nil, err
	}
	if !desired {
		if err := w.deleteActual(ctx, before); err != nil {
			return nil, err
		}
		w.emit(models.ActualLRPEvents(before, nil)...)
		return &CrashResult{ActualLRPChange: ActualLRPChange{Before: before}}, nil
	}
	count := w.p.restart.NextCrashCount(before, w.now)
	restart := w.p.restart.RestartImmediately(count)
	to := stateCrashed
	if restart {
		to = stateUnclaimed
	}
	after := w.next(before, to)
	after.Since = w.nowNano()
	after.InstanceGuid, after.CellId = "", ""
	after.CrashCount = count
	after.CrashReason = models.TruncateReason(reason)
	clearPlacement(after)
	if err := w.updateActual(ctx, after); err != nil {
		return nil, err
	}
	w.emit(models.ActualLRPCrashedEvent(before, after))
	w.emit(models.ActualLRPEvents(before, after)...)
	return &CrashResult{ActualLRPChange: ActualLRPChange{Before: before, After: after}, Restart: restart}, nil
}

// indexDesired reports whether a DesiredLRP of processGuid exists with more than index
// instances. It reads without a lock: the caller holds the index's actual rows, and the
// store takes the desired row first, so a lock here could deadlock with a removal; a
// removal committing after this read then sees and deletes the row this write leaves.
func (w *writeTx) indexDesired(ctx context.Context, processGuid string, index int32) (bool, error) {
	var instances int32
	err := w.QueryRow(ctx, `SELECT instances FROM desired_lrps WHERE process_guid = $1`, processGuid).Scan(&instances)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil && index < instances, err
}

// FailActualLRP records why an UNCLAIMED row could not be placed.
func (p *Postgres) FailActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, reason string) (*ActualLRPChange, error) {
	if key == nil {
		return nil, invalidRequest("actual lrp key is required")
	}
	var change *ActualLRPChange
	err := p.write(ctx, "fail-actual-lrp", func(w *writeTx) error {
		rows, err := w.lockIndex(ctx, key.GetProcessGuid(), key.GetIndex())
		if err != nil {
			return err
		}
		before := rows.ordinary
		if before == nil {
			return notFound("actual lrp %s/%d not found", key.GetProcessGuid(), key.GetIndex())
		}
		if err := p.actor.MayChangeActualLRP(before, false); err != nil {
			return err
		}
		if before.State != stateUnclaimed {
			return models.NewError(models.ErrTypeInvalidStateTransition,
				"cannot fail actual lrp %s/%d: it is %s, not UNCLAIMED", before.ProcessGuid, before.Index, before.State)
		}
		after := w.next(before, stateUnclaimed)
		after.PlacementError = models.TruncateReason(reason)
		after.Since = w.nowNano()
		change, err = w.saveActual(ctx, before, after)
		return err
	})
	return change, err
}

// RemoveActualLRP deletes the ORDINARY row; a non-nil ik must match the stored instance.
func (p *Postgres) RemoveActualLRP(ctx context.Context, processGuid string, index int32, ik *modelsv1.ActualLRPInstanceKey) (*ActualLRPChange, error) {
	if err := p.actor.MayUseInstanceKey(ik); err != nil {
		return nil, err // a cell must name its instance
	}
	var change *ActualLRPChange
	err := p.write(ctx, "remove-actual-lrp", func(w *writeTx) error {
		rows, err := w.lockIndex(ctx, processGuid, index)
		if err != nil {
			return err
		}
		before := rows.ordinary
		if before == nil {
			return notFound("actual lrp %s/%d not found", processGuid, index)
		}
		if err := p.actor.MayChangeActualLRP(before, false); err != nil {
			return err
		}
		if ik != nil && !sameInstance(before, ik) {
			return models.NewError(models.ErrTypeResourceConflict,
				"actual lrp %s/%d belongs to instance %q on cell %q", processGuid, index, before.InstanceGuid, before.CellId)
		}
		if err := w.deleteActual(ctx, before); err != nil {
			return err
		}
		w.emit(models.ActualLRPEvents(before, nil)...)
		change = &ActualLRPChange{Before: before}
		return nil
	})
	return change, err
}

// RetireActualLRP retires the ORDINARY row of an index in one transaction, deciding on
// the row it has locked, so that no claim or start can land between its read and its
// write: an unplaced row (UNCLAIMED, CRASHED) is deleted and nil returned; a placed one
// (CLAIMED, RUNNING) is left as it is and returned, naming the instance its cell's rep
// must stop. The actor's rule is that of every lifecycle write (MayChangeActualLRP).
func (p *Postgres) RetireActualLRP(ctx context.Context, processGuid string, index int32) (*modelsv1.ActualLRP, error) {
	var toStop *modelsv1.ActualLRP
	err := p.write(ctx, "retire-actual-lrp", func(w *writeTx) error {
		rows, err := w.lockIndex(ctx, processGuid, index)
		if err != nil {
			return err
		}
		if rows.ordinary == nil {
			return notFound("actual lrp %s/%d not found", processGuid, index)
		}
		if err := p.actor.MayChangeActualLRP(rows.ordinary, false); err != nil {
			return err
		}
		outcome, err := w.retire(ctx, rows, rows.ordinary)
		if err != nil {
			return err
		}
		toStop = outcome.ToStop
		return nil
	})
	return toStop, err
}

// next copies a row for a change to state: modification index bumped, since set to now
// when the state changes.
func (w *writeTx) next(before *modelsv1.ActualLRP, state modelsv1.ActualLRPState) *modelsv1.ActualLRP {
	after := proto.CloneOf(before)
	bump(after)
	if after.State != state {
		after.State = state
		after.Since = w.nowNano()
	}
	return after
}

// saveActual writes a changed row and emits its instance events.
func (w *writeTx) saveActual(ctx context.Context, before, after *modelsv1.ActualLRP) (*ActualLRPChange, error) {
	if err := w.updateActual(ctx, after); err != nil {
		return nil, err
	}
	w.emit(models.ActualLRPEvents(before, after)...)
	return &ActualLRPChange{Before: before, After: after}, nil
}

func bump(a *modelsv1.ActualLRP) {
	if a.ModificationTag == nil {
		a.ModificationTag = &modelsv1.ModificationTag{Epoch: uuid.NewString()}
	}
	a.ModificationTag.Index++
}

// clearPlacement drops what only a placed instance has.
func clearPlacement(a *modelsv1.ActualLRP) {
	a.NetInfo = nil
	a.Routable = false
	a.AvailabilityZone = ""
	a.InternalRoutes = nil
	a.MetricTags = nil
}

func sameInstance(a *modelsv1.ActualLRP, ik *modelsv1.ActualLRPInstanceKey) bool {
	return a.InstanceGuid == ik.GetInstanceGuid() && a.CellId == ik.GetCellId()
}
