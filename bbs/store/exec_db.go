package store

import (
	"context"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// RecordExec appends an exec_started event for the RUNNING instance ik holds at key's
// index (its ORDINARY or its EVACUATING row), naming the row's domain. A cell may
// record only for its own instances; an instance the index does not hold is
// ResourceNotFound, one that does not run InvalidStateTransition.
func (p *Postgres) RecordExec(ctx context.Context, key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, user string, args []string, tty bool) error {
	if err := p.actor.MayUseInstanceKey(ik); err != nil {
		return err
	}
	return p.write(ctx, "record-exec", func(w *writeTx) error {
		rows, err := w.lockIndex(ctx, key.GetProcessGuid(), key.GetIndex())
		if err != nil {
			return err
		}
		var held *modelsv1.ActualLRP
		for _, a := range []*modelsv1.ActualLRP{rows.ordinary, rows.evacuating} {
			if a != nil && sameInstance(a, ik) {
				held = a
				break
			}
		}
		if held == nil {
			return notFound("actual lrp %s/%d has no instance %q on cell %q",
				key.GetProcessGuid(), key.GetIndex(), ik.GetInstanceGuid(), ik.GetCellId())
		}
		if held.GetState() != modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING {
			return models.NewError(models.ErrTypeInvalidStateTransition, "actual lrp %s/%d instance %q is %s, not RUNNING",
				key.GetProcessGuid(), key.GetIndex(), ik.GetInstanceGuid(), held.GetState())
		}
		w.emit(models.ExecStartedEvent(&modelsv1.ActualLRPKey{ProcessGuid: held.GetProcessGuid(), Index: held.GetIndex(), Domain: held.GetDomain()},
			ik, user, args, tty))
		return nil
	})
}
