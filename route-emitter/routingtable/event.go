package routingtable

import (
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ApplyEvent applies one BBS event (reference/routing.md §2.5). Task and crash events
// change nothing. A malformed cf-router entry is reported; the rest is applied.
func (t *Table) ApplyEvent(e *modelsv1.Event) (Messages, error) {
	switch p := e.GetPayload().(type) {
	case *modelsv1.Event_DesiredLrpCreated:
		d, err := DesiredFromLRP(p.DesiredLrpCreated.GetDesiredLrp())
		return t.SetDesired(d), err
	case *modelsv1.Event_DesiredLrpChanged:
		d, err := DesiredFromLRP(p.DesiredLrpChanged.GetAfter())
		return t.SetDesired(d), err
	case *modelsv1.Event_DesiredLrpRemoved:
		return t.RemoveDesired(p.DesiredLrpRemoved.GetDesiredLrp().GetProcessGuid()), nil
	case *modelsv1.Event_ActualLrpInstanceCreated:
		return t.SetActual(ActualFromLRP(p.ActualLrpInstanceCreated.GetActualLrp())), nil
	case *modelsv1.Event_ActualLrpInstanceChanged:
		c := p.ActualLrpInstanceChanged
		before := ActualFromInfo(c.GetActualLrpKey(), c.GetActualLrpInstanceKey(), c.GetBefore())
		after := ActualFromInfo(c.GetActualLrpKey(), c.GetActualLrpInstanceKey(), c.GetAfter())
		return t.moveActual(before, after), nil
	case *modelsv1.Event_ActualLrpInstanceRemoved:
		return t.RemoveActual(ActualFromLRP(p.ActualLrpInstanceRemoved.GetActualLrp())), nil
	default:
		return Messages{}, nil
	}
}

// moveActual applies a row change in one step: when the presence changed (ordinary →
// evacuating), the row under the old presence goes and the new one comes.
func (t *Table) moveActual(before, after Actual) Messages {
	return t.change(after.ProcessGUID, func(p *process) {
		newKey := rowKey{after.Index, after.Presence}
		if old := p.actuals[newKey]; old != nil && !old.Tag.SucceededBy(after.Tag) {
			return
		}
		if before.Presence != after.Presence {
			oldKey := rowKey{before.Index, before.Presence}
			if old := p.actuals[oldKey]; old != nil && old.InstanceGUID == before.InstanceGUID {
				delete(p.actuals, oldKey)
			}
		}
		p.actuals[newKey] = &after
	})
}

// RunningProcess returns the process guid of an instance event that leaves an instance
// RUNNING (the watcher fetches that process's routing info first when the table lacks it).
func RunningProcess(e *modelsv1.Event) (string, bool) {
	running := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	switch p := e.GetPayload().(type) {
	case *modelsv1.Event_ActualLrpInstanceCreated:
		a := p.ActualLrpInstanceCreated.GetActualLrp()
		return a.GetProcessGuid(), a.GetState() == running
	case *modelsv1.Event_ActualLrpInstanceChanged:
		c := p.ActualLrpInstanceChanged
		return c.GetActualLrpKey().GetProcessGuid(), c.GetAfter().GetState() == running
	}
	return "", false
}
