package store

import (
	"context"
	"errors"
	"fmt"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

const (
	presenceSuspect    = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT
	presenceEvacuating = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING
)

// LRPActionOutcome is what one convergence action did, for the caller's side effects.
type LRPActionOutcome struct {
	// Refused says why the action was not applied (nothing changed); empty when applied.
	Refused string
	// Auction is the index to auction (created, unclaimed, suspect replacement), or nil.
	Auction *modelsv1.ActualLRPKey
	// ToStop is a placed row a retire leaves to its rep to stop, or nil.
	ToStop *modelsv1.ActualLRP
}

// ApplyLRPAction applies one convergence action in one transaction, only while the rows
// it names still match its condition (state and modification tag); otherwise it changes
// nothing and returns an outcome with Refused set. A malformed action is
// ErrInvalidRequest.
func (p *Postgres) ApplyLRPAction(ctx context.Context, action *bbsv1.LRPAction) (*LRPActionOutcome, error) {
	apply, err := lrpActionFunc(action)
	if err != nil {
		return nil, err
	}
	var outcome *LRPActionOutcome
	err = p.write(ctx, "apply-lrp-action", func(w *writeTx) error {
		var applyErr error
		outcome, applyErr = apply(ctx, w)
		return applyErr
	})
	return outcome, err
}

// lrpActionFunc picks the transaction body of an action after checking its shape.
func lrpActionFunc(action *bbsv1.LRPAction) (func(context.Context, *writeTx) (*LRPActionOutcome, error), error) {
	switch a := action.GetAction().(type) {
	case *bbsv1.LRPAction_CreateMissing:
		key := a.CreateMissing.GetKey()
		if key.GetProcessGuid() == "" || a.CreateMissing.GetDesiredModificationTag() == nil {
			return nil, invalidRequest("create_missing needs key.process_guid and desired_modification_tag")
		}
		return func(ctx context.Context, w *writeTx) (*LRPActionOutcome, error) {
			return w.createMissing(ctx, key, a.CreateMissing.GetDesiredModificationTag())
		}, nil
	case *bbsv1.LRPAction_Unclaim:
		return conditional("unclaim", a.Unclaim, (*writeTx).unclaim)
	case *bbsv1.LRPAction_UnclaimReplacement:
		return conditional("unclaim_replacement", a.UnclaimReplacement, (*writeTx).unclaim)
	case *bbsv1.LRPAction_MarkSuspect:
		return conditional("mark_suspect", a.MarkSuspect, (*writeTx).markSuspect)
	case *bbsv1.LRPAction_Remove:
		return conditional("remove", a.Remove, (*writeTx).removeRow)
	case *bbsv1.LRPAction_Retire:
		return conditional("retire", a.Retire, (*writeTx).retire)
	case *bbsv1.LRPAction_PromoteSuspect:
		s, r := a.PromoteSuspect.GetSuspect(), a.PromoteSuspect.GetReplacement()
		if err := checkCondition("promote_suspect.suspect", s); err != nil {
			return nil, err
		}
		if r != nil {
			if err := checkCondition("promote_suspect.replacement", r); err != nil {
				return nil, err
			}
		}
		return func(ctx context.Context, w *writeTx) (*LRPActionOutcome, error) {
			return w.promoteSuspect(ctx, s, r)
		}, nil
	default:
		return nil, invalidRequest("lrp action has no action set")
	}
}

// conditional checks a row condition and returns a body that locks the index, checks
// the condition and, when it holds, runs apply on the matching row.
func conditional(field string, c *bbsv1.LRPRowCondition,
	apply func(w *writeTx, ctx context.Context, rows indexRows, row *modelsv1.ActualLRP) (*LRPActionOutcome, error),
) (func(context.Context, *writeTx) (*LRPActionOutcome, error), error) {
	if err := checkCondition(field, c); err != nil {
		return nil, err
	}
	return func(ctx context.Context, w *writeTx) (*LRPActionOutcome, error) {
		rows, err := w.lockIndex(ctx, c.GetKey().GetProcessGuid(), c.GetKey().GetIndex())
		if err != nil {
			return nil, err
		}
		row, refused := matchCondition(rows, c)
		if refused != "" {
			return refuse("%s", refused), nil
		}
		return apply(w, ctx, rows, row)
	}, nil
}

// checkCondition rejects a condition that cannot name a row.
func checkCondition(field string, c *bbsv1.LRPRowCondition) error {
	switch {
	case c == nil:
		return invalidRequest("%s is required", field)
	case c.GetKey().GetProcessGuid() == "":
		return invalidRequest("%s.key.process_guid is required", field)
	case c.GetPresence() == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED:
		return invalidRequest("%s.presence is required", field)
	case c.GetModificationTag() == nil:
		return invalidRequest("%s.modification_tag is required", field)
	}
	return nil
}

// matchCondition returns the row the condition names, or why it no longer matches.
func matchCondition(rows indexRows, c *bbsv1.LRPRowCondition) (*modelsv1.ActualLRP, string) {
	row := rows.at(c.GetPresence())
	if row == nil {
		return nil, fmt.Sprintf("row is gone: %s/%d %s", c.GetKey().GetProcessGuid(), c.GetKey().GetIndex(), models.PresenceName(c.GetPresence()))
	}
	if row.GetState() != c.GetState() || !sameTag(row.GetModificationTag(), c.GetModificationTag()) {
		return nil, fmt.Sprintf("row moved on: state %s, tag %s", models.StateName(row.GetState()), describeTag(row.GetModificationTag()))
	}
	return row, ""
}

// at returns the row of a presence.
func (r indexRows) at(p modelsv1.ActualLRPPresence) *modelsv1.ActualLRP {
	switch p {
	case presenceOrdinary:
		return r.ordinary
	case presenceEvacuating:
		return r.evacuating
	case presenceSuspect:
		return r.suspect
	}
	return nil
}

func sameTag(a, b *modelsv1.ModificationTag) bool {
	return a.GetEpoch() == b.GetEpoch() && a.GetIndex() == b.GetIndex()
}

func describeTag(t *modelsv1.ModificationTag) string {
	return fmt.Sprintf("%s:%d", t.GetEpoch(), t.GetIndex())
}

func refuse(format string, args ...any) *LRPActionOutcome {
	return &LRPActionOutcome{Refused: fmt.Sprintf(format, args...)}
}

func keyOf(a *modelsv1.ActualLRP) *modelsv1.ActualLRPKey {
	return &modelsv1.ActualLRPKey{ProcessGuid: a.GetProcessGuid(), Index: a.GetIndex(), Domain: a.GetDomain()}
}

// createMissing inserts the UNCLAIMED ORDINARY row of an index while the DesiredLRP
// keeps its tag, the index is below its instances and has no ORDINARY row.
func (w *writeTx) createMissing(ctx context.Context, key *modelsv1.ActualLRPKey, tag *modelsv1.ModificationTag) (*LRPActionOutcome, error) {
	si, err := scanSchedulingInfo(w.QueryRow(ctx, `SELECT `+schedulingColumns+
		` FROM desired_lrps WHERE process_guid = $1 FOR UPDATE`, key.GetProcessGuid()))
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse("desired lrp %q is gone", key.GetProcessGuid()), nil
	}
	if err != nil {
		return nil, err
	}
	if !sameTag(si.GetModificationTag(), tag) {
		return refuse("desired lrp moved on: tag %s", describeTag(si.GetModificationTag())), nil
	}
	if key.GetIndex() < 0 || key.GetIndex() >= si.GetInstances() {
		return refuse("index %d is not below instances %d", key.GetIndex(), si.GetInstances()), nil
	}
	rows, err := w.lockIndex(ctx, key.GetProcessGuid(), key.GetIndex())
	if err != nil {
		return nil, err
	}
	if o := rows.ordinary; o != nil {
		return refuse("ordinary row exists: state %s, tag %s", models.StateName(o.GetState()), describeTag(o.GetModificationTag())), nil
	}
	created, err := w.createUnclaimed(ctx, &modelsv1.DesiredLRP{ProcessGuid: si.GetProcessGuid(), Domain: si.GetDomain()},
		key.GetIndex(), key.GetIndex()+1)
	if err != nil {
		return nil, err
	}
	if len(created) == 0 {
		return nil, errRetryTransaction // inserted concurrently after the lock
	}
	return &LRPActionOutcome{Auction: keyOf(created[0])}, nil
}

// unclaim moves an ORDINARY row to UNCLAIMED (instance key and placement cleared, crash
// count kept) and asks for an auction; a stale UNCLAIMED row is left as is.
func (w *writeTx) unclaim(ctx context.Context, _ indexRows, row *modelsv1.ActualLRP) (*LRPActionOutcome, error) {
	if row.GetPresence() != presenceOrdinary {
		return refuse("only an ORDINARY row can be unclaimed, not %s", models.PresenceName(row.GetPresence())), nil
	}
	outcome := &LRPActionOutcome{Auction: keyOf(row)}
	if row.GetState() == stateUnclaimed {
		return outcome, nil
	}
	if err := models.ActualLRPTransition(row, stateUnclaimed, nil); err != nil {
		return refuse("%v", err), nil
	}
	after := w.next(row, stateUnclaimed)
	after.InstanceGuid, after.CellId = "", ""
	clearPlacement(after)
	if _, err := w.saveActual(ctx, row, after); err != nil {
		return nil, err
	}
	return outcome, nil
}

// markSuspect turns a placed ORDINARY row into a SUSPECT one and creates its UNCLAIMED
// ORDINARY replacement, to be auctioned.
func (w *writeTx) markSuspect(ctx context.Context, rows indexRows, row *modelsv1.ActualLRP) (*LRPActionOutcome, error) {
	if row.GetPresence() != presenceOrdinary || !isPlaced(row) {
		return refuse("only a CLAIMED or RUNNING ORDINARY row can become suspect"), nil
	}
	if rows.suspect != nil {
		return refuse("index already has a SUSPECT row"), nil
	}
	suspect := proto.CloneOf(row)
	suspect.Presence = presenceSuspect
	bump(suspect)
	if err := w.deleteActual(ctx, row); err != nil {
		return nil, err
	}
	if err := w.insertActual(ctx, suspect); err != nil {
		return nil, err
	}
	w.emit(models.ActualLRPEvents(row, suspect)...)
	created, err := w.createUnclaimed(ctx, &modelsv1.DesiredLRP{ProcessGuid: row.GetProcessGuid(), Domain: row.GetDomain()},
		row.GetIndex(), row.GetIndex()+1)
	if err != nil {
		return nil, err
	}
	if len(created) == 0 {
		return nil, errRetryTransaction
	}
	return &LRPActionOutcome{Auction: keyOf(created[0])}, nil
}

// removeRow deletes a SUSPECT or EVACUATING row.
func (w *writeTx) removeRow(ctx context.Context, _ indexRows, row *modelsv1.ActualLRP) (*LRPActionOutcome, error) {
	if row.GetPresence() == presenceOrdinary {
		return refuse("remove applies to SUSPECT and EVACUATING rows; an ORDINARY row is retired"), nil
	}
	return w.deleteRow(ctx, row)
}

// deleteRow deletes a row and emits its removed event.
func (w *writeTx) deleteRow(ctx context.Context, row *modelsv1.ActualLRP) (*LRPActionOutcome, error) {
	if err := w.deleteActual(ctx, row); err != nil {
		return nil, err
	}
	w.emit(models.ActualLRPEvents(row, nil)...)
	return &LRPActionOutcome{}, nil
}

// retire deletes an unplaced ORDINARY row and returns a placed one to stop.
func (w *writeTx) retire(ctx context.Context, _ indexRows, row *modelsv1.ActualLRP) (*LRPActionOutcome, error) {
	if row.GetPresence() != presenceOrdinary {
		return refuse("only an ORDINARY row can be retired, not %s", models.PresenceName(row.GetPresence())), nil
	}
	if isPlaced(row) {
		return &LRPActionOutcome{ToStop: row}, nil
	}
	return w.deleteRow(ctx, row)
}

// promoteSuspect makes the SUSPECT row ORDINARY again, deleting its replacement.
func (w *writeTx) promoteSuspect(ctx context.Context, s, r *bbsv1.LRPRowCondition) (*LRPActionOutcome, error) {
	if s.GetPresence() != presenceSuspect {
		return refuse("promote_suspect.suspect must name a SUSPECT row"), nil
	}
	if r != nil && (r.GetPresence() != presenceOrdinary || !proto.Equal(r.GetKey(), s.GetKey())) {
		return refuse("promote_suspect.replacement must name the ORDINARY row of the same index"), nil
	}
	rows, err := w.lockIndex(ctx, s.GetKey().GetProcessGuid(), s.GetKey().GetIndex())
	if err != nil {
		return nil, err
	}
	suspect, refused := matchCondition(rows, s)
	if refused != "" {
		return refuse("suspect %s", refused), nil
	}
	if r != nil {
		replacement, refused := matchCondition(rows, r)
		if refused != "" {
			return refuse("replacement %s", refused), nil
		}
		if _, err := w.deleteRow(ctx, replacement); err != nil {
			return nil, err
		}
	} else if o := rows.ordinary; o != nil {
		return refuse("index has an ORDINARY row: state %s, tag %s", models.StateName(o.GetState()), describeTag(o.GetModificationTag())), nil
	}
	promoted := proto.CloneOf(suspect)
	promoted.Presence = presenceOrdinary
	bump(promoted)
	if err := w.deleteActual(ctx, suspect); err != nil {
		return nil, err
	}
	if err := w.insertActual(ctx, promoted); err != nil {
		return nil, err
	}
	w.emit(models.ActualLRPEvents(suspect, promoted)...)
	return &LRPActionOutcome{}, nil
}
