package store

import (
	"context"
	"errors"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

const strategyRecreate = modelsv1.UpdateStrategy_UPDATE_STRATEGY_RECREATE

// EvacuationDB moves the rows of instances on a draining cell (reference/bbs.md §1.2
// "Evacuation"). Every call matches rows on the caller's instance key and never touches
// a row of another instance, except that the ORDINARY row the caller unclaims becomes
// the replacement to auction.
type EvacuationDB interface {
	// EvacuateClaimedActualLRP deletes the caller's EVACUATING or SUSPECT row, or
	// unclaims the caller's placed ORDINARY row (Auction set). KeepContainer is false.
	EvacuateClaimedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey) (*EvacuationResult, error)
	// EvacuateRunningActualLRP copies the caller's placed ORDINARY row to a RUNNING
	// EVACUATING row and unclaims the ORDINARY row (Auction set, KeepContainer true);
	// refreshes the caller's EVACUATING row while its replacement is not yet RUNNING or
	// CRASHED (KeepContainer true); otherwise deletes the caller's rows and answers
	// KeepContainer false. Under the RECREATE strategy the ORDINARY row is only
	// unclaimed when every desired instance is RUNNING (else KeepContainer true, no change).
	EvacuateRunningActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, net *modelsv1.ActualLRPNetInfo, opts StartOptions) (*EvacuationResult, error)
	// EvacuateStoppedActualLRP deletes every row of the index that belongs to the caller.
	EvacuateStoppedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey) (*EvacuationResult, error)
	// EvacuateCrashedActualLRP deletes the caller's EVACUATING or SUSPECT row, or runs the
	// crash logic on the caller's ORDINARY row (Auction set on an immediate restart).
	EvacuateCrashedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, reason string) (*EvacuationResult, error)
	// RemoveEvacuatingActualLRP deletes the EVACUATING row when it belongs to the caller;
	// ErrResourceNotFound otherwise.
	RemoveEvacuatingActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey) (*ActualLRPChange, error)
}

// EvacuationResult is what an evacuation call decided.
type EvacuationResult struct {
	// KeepContainer tells the draining rep to keep the instance running for now.
	KeepContainer bool
	// Auction is true when the ORDINARY row became UNCLAIMED and must be placed.
	Auction bool
}

// evacuation is one evacuation call's transaction: the locked rows of the index, the
// DesiredLRP when asked for, the caller's instance key and the result so far.
type evacuation struct {
	*writeTx
	rows indexRows
	// desired is the DesiredLRP's scheduling info (nil when gone), read only by
	// evacuations that need it.
	desired *modelsv1.DesiredLRPSchedulingInfo
	key     *modelsv1.ActualLRPKey
	ik      *modelsv1.ActualLRPInstanceKey
	result  EvacuationResult
}

// evacuate runs fn on the locked rows of key's index in one write transaction. With
// readDesired, the DesiredLRP is read FOR SHARE first, keeping the store's lock order
// (desired row, then actual rows).
func (p *Postgres) evacuate(ctx context.Context, op string, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey,
	readDesired bool, fn func(ctx context.Context, e *evacuation) error) (*EvacuationResult, error) {
	if key == nil || ik == nil {
		return nil, invalidRequest("actual lrp key and instance key are required")
	}
	if err := p.actor.MayUseInstanceKey(ik); err != nil {
		return nil, err // with its own key, a cell matches only rows its cell holds (own)
	}
	var result *EvacuationResult
	err := p.write(ctx, op, func(w *writeTx) error {
		e := &evacuation{writeTx: w, key: key, ik: ik}
		var err error
		if readDesired {
			if e.desired, err = w.shareDesired(ctx, key.GetProcessGuid()); err != nil {
				return err
			}
		}
		if e.rows, err = w.lockIndex(ctx, key.GetProcessGuid(), key.GetIndex()); err != nil {
			return err
		}
		if err := fn(ctx, e); err != nil {
			return err
		}
		result = &e.result
		return nil
	})
	return result, err
}

// EvacuateClaimedActualLRP hands an unstarted instance of a draining cell back.
func (p *Postgres) EvacuateClaimedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey) (*EvacuationResult, error) {
	return p.evacuate(ctx, "evacuate-claimed-actual-lrp", key, ik, false, func(ctx context.Context, e *evacuation) error {
		if err := e.deleteOwn(ctx, e.rows.evacuating, e.rows.suspect); err != nil {
			return err
		}
		o := e.own(e.rows.ordinary)
		if o == nil || !isPlaced(o) {
			return nil
		}
		outcome, err := e.unclaim(ctx, e.rows, o)
		if err != nil {
			return err
		}
		if outcome.Refused != "" {
			return models.NewError(models.ErrTypeInvalidStateTransition, "cannot unclaim actual lrp %s/%d: %s", o.ProcessGuid, o.Index, outcome.Refused)
		}
		e.result.Auction = outcome.Auction != nil
		return nil
	})
}

// EvacuateRunningActualLRP keeps a running instance of a draining cell serving while
// its replacement is placed elsewhere (the "evacuation dance").
func (p *Postgres) EvacuateRunningActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, net *modelsv1.ActualLRPNetInfo, opts StartOptions) (*EvacuationResult, error) {
	if net == nil {
		return nil, invalidRequest("actual lrp net info is required")
	}
	return p.evacuate(ctx, "evacuate-running-actual-lrp", key, ik, true, func(ctx context.Context, e *evacuation) error {
		return e.running(ctx, net, opts)
	})
}

// running decides EvacuateRunning on the locked rows.
func (e *evacuation) running(ctx context.Context, net *modelsv1.ActualLRPNetInfo, opts StartOptions) error {
	ord, desired := e.rows.ordinary, e.desired
	if desired == nil {
		return e.deleteOwn(ctx, e.rows.evacuating, e.rows.suspect, e.rows.ordinary)
	}
	replacementDone := ord != nil && (ord.State == stateRunning && !sameInstance(ord, e.ik) || ord.State == stateCrashed)
	replacementUnwanted := ord == nil && e.key.GetIndex() >= desired.GetInstances()
	if copyRow := e.own(e.rows.evacuating, e.rows.suspect); copyRow != nil {
		if replacementDone || replacementUnwanted {
			return e.deleteOwn(ctx, copyRow)
		}
		e.result.KeepContainer = true
		if copyRow.Presence != presenceEvacuating {
			return nil // a SUSPECT row keeps serving as it is until its replacement runs
		}
		return e.refresh(ctx, copyRow, net, opts)
	}
	if o := e.own(ord); o != nil && isPlaced(o) {
		if desired.GetUpdateStrategy() == strategyRecreate {
			allRunning, err := e.allRunning(ctx, desired)
			if err != nil {
				return err
			}
			if !allRunning {
				e.result.KeepContainer = true
				return nil
			}
		}
		return e.dance(ctx, o, net, opts)
	}
	return nil // someone else owns the index: stop, and touch nothing
}

// dance copies the caller's ORDINARY row to a RUNNING EVACUATING row with the reported
// net info and unclaims the ORDINARY row for an auction: one changed event (presence
// becomes EVACUATING) and one created event for the UNCLAIMED row.
func (e *evacuation) dance(ctx context.Context, ord *modelsv1.ActualLRP, net *modelsv1.ActualLRPNetInfo, opts StartOptions) error {
	if old := e.rows.evacuating; old != nil {
		// An EVACUATING row of another instance cannot outlive a RUNNING replacement
		// (starting deletes it); should one linger, the newer evacuee replaces it.
		if _, err := e.deleteRow(ctx, old); err != nil {
			return err
		}
	}
	copyRow := proto.CloneOf(ord)
	copyRow.Presence = presenceEvacuating
	applyStart(copyRow, e.ik, net, opts)
	if copyRow.State != stateRunning {
		copyRow.State, copyRow.Since = stateRunning, e.nowNano()
	}
	bump(copyRow)
	if err := e.insertActual(ctx, copyRow); err != nil {
		return err
	}
	e.emit(models.ActualLRPEvents(ord, copyRow)...)
	unclaimed := e.next(ord, stateUnclaimed)
	unclaimed.InstanceGuid, unclaimed.CellId = "", ""
	clearPlacement(unclaimed)
	if err := e.updateActual(ctx, unclaimed); err != nil {
		return err
	}
	e.emit(models.ActualLRPEvents(nil, unclaimed)...)
	e.result.KeepContainer, e.result.Auction = true, true
	return nil
}

// refresh updates the caller's EVACUATING row with what its rep reports now.
func (e *evacuation) refresh(ctx context.Context, evac *modelsv1.ActualLRP, net *modelsv1.ActualLRPNetInfo, opts StartOptions) error {
	after := proto.CloneOf(evac)
	applyStart(after, e.ik, net, opts)
	if proto.Equal(evac, after) {
		return nil
	}
	bump(after)
	_, err := e.saveActual(ctx, evac, after)
	return err
}

// allRunning reports whether every desired index has a RUNNING ORDINARY row.
func (e *evacuation) allRunning(ctx context.Context, desired *modelsv1.DesiredLRPSchedulingInfo) (bool, error) {
	var n int32
	err := e.QueryRow(ctx, `SELECT count(*) FROM actual_lrps
WHERE process_guid = $1 AND presence = $2 AND state = $3 AND instance_index < $4`,
		desired.GetProcessGuid(), int16(presenceOrdinary), int16(stateRunning), desired.GetInstances()).Scan(&n)
	return n >= desired.GetInstances(), err
}

// shareDesired reads the scheduling info of a DesiredLRP FOR SHARE; nil if it is gone.
func (w *writeTx) shareDesired(ctx context.Context, processGuid string) (*modelsv1.DesiredLRPSchedulingInfo, error) {
	si, err := scanSchedulingInfo(w.QueryRow(ctx, `SELECT `+schedulingColumns+
		` FROM desired_lrps WHERE process_guid = $1 FOR SHARE`, processGuid))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return si, err
}

// EvacuateStoppedActualLRP forgets a stopped instance of a draining cell.
func (p *Postgres) EvacuateStoppedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey) (*EvacuationResult, error) {
	return p.evacuate(ctx, "evacuate-stopped-actual-lrp", key, ik, false, func(ctx context.Context, e *evacuation) error {
		return e.deleteOwn(ctx, e.rows.ordinary, e.rows.evacuating, e.rows.suspect)
	})
}

// EvacuateCrashedActualLRP records a crash on a draining cell.
func (p *Postgres) EvacuateCrashedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, reason string) (*EvacuationResult, error) {
	return p.evacuate(ctx, "evacuate-crashed-actual-lrp", key, ik, false, func(ctx context.Context, e *evacuation) error {
		if err := e.deleteOwn(ctx, e.rows.evacuating, e.rows.suspect); err != nil {
			return err
		}
		o := e.own(e.rows.ordinary)
		if o == nil || !isPlaced(o) {
			return nil
		}
		crash, err := e.crashOrdinary(ctx, o, e.ik, reason)
		if err != nil {
			return err
		}
		e.result.Auction = crash.Restart
		return nil
	})
}

// RemoveEvacuatingActualLRP deletes the caller's EVACUATING row.
func (p *Postgres) RemoveEvacuatingActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey) (*ActualLRPChange, error) {
	var removed *modelsv1.ActualLRP
	_, err := p.evacuate(ctx, "remove-evacuating-actual-lrp", key, ik, false, func(ctx context.Context, e *evacuation) error {
		if removed = e.own(e.rows.evacuating); removed == nil {
			return notFound("evacuating actual lrp %s/%d of instance %q on cell %q not found",
				key.GetProcessGuid(), key.GetIndex(), ik.GetInstanceGuid(), ik.GetCellId())
		}
		_, err := e.deleteRow(ctx, removed)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &ActualLRPChange{Before: removed}, nil
}

// own returns the first of rows that exists and belongs to the caller, or nil.
func (e *evacuation) own(rows ...*modelsv1.ActualLRP) *modelsv1.ActualLRP {
	for _, r := range rows {
		if r != nil && sameInstance(r, e.ik) {
			return r
		}
	}
	return nil
}

// deleteOwn deletes those of rows that exist and belong to the caller.
func (e *evacuation) deleteOwn(ctx context.Context, rows ...*modelsv1.ActualLRP) error {
	for _, r := range rows {
		if r == nil || !sameInstance(r, e.ik) {
			continue
		}
		if _, err := e.deleteRow(ctx, r); err != nil {
			return err
		}
	}
	return nil
}
