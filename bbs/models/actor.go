package models

import (
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Actor is who asks the store for a change or a read: a trusted component or operator
// (the zero Actor), or a cell acting for itself (CellActor), which is held to the rule
// of Kubernetes' NodeRestriction: it may take a row nobody holds (an UNCLAIMED instance,
// a PENDING task) and change only rows its own cell holds. Refusals are Unauthorized
// (gRPC PermissionDenied).
type Actor struct {
	cell   string
	isCell bool
}

// CellActor is the actor of a rep whose certificate names cell.
func CellActor(cell string) Actor { return Actor{cell: cell, isCell: true} }

// IsCell reports whether the actor is a cell (and not trusted).
func (a Actor) IsCell() bool { return a.isCell }

// Cell is the cell a cell actor acts for ("" for a trusted actor).
func (a Actor) Cell() string { return a.cell }

// holds reports whether the actor's cell is cell (never for an empty cell id).
func (a Actor) holds(cell string) bool { return a.cell != "" && cell == a.cell }

// MayUseInstanceKey checks that a cell names only its own cell in an instance key.
func (a Actor) MayUseInstanceKey(ik *modelsv1.ActualLRPInstanceKey) error {
	if !a.isCell || a.holds(ik.GetCellId()) {
		return nil
	}
	return NewError(ErrTypeUnauthorized, "cell %q may not act with the instance key of cell %q", a.cell, ik.GetCellId())
}

// MayActForCell checks that a cell acts only for its own cell (a request's cell_id).
func (a Actor) MayActForCell(cell string) error {
	if !a.isCell || a.holds(cell) {
		return nil
	}
	return NewError(ErrTypeUnauthorized, "cell %q may not act for cell %q", a.cell, cell)
}

// MayChangeActualLRP checks that a cell may change row (nil: the row is missing): one
// its cell holds, or, when takes (claim, start), an UNCLAIMED one. A cell may not
// create a missing row.
func (a Actor) MayChangeActualLRP(row *modelsv1.ActualLRP, takes bool) error {
	switch {
	case !a.isCell:
		return nil
	case row == nil:
		return NewError(ErrTypeUnauthorized, "cell %q may not create an actual lrp", a.cell)
	case a.holds(row.GetCellId()), takes && row.GetState() == unclaimed:
		return nil
	}
	return NewError(ErrTypeUnauthorized, "cell %q may not change actual lrp %s/%d: it is %s on cell %q",
		a.cell, row.GetProcessGuid(), row.GetIndex(), StateName(row.GetState()), row.GetCellId())
}

// MayChangeTask checks that a cell may change task t: one RUNNING on its cell, or,
// when takes (start), a PENDING one.
func (a Actor) MayChangeTask(t *modelsv1.Task, takes bool) error {
	switch {
	case !a.isCell, a.holds(t.GetCellId()), takes && t.GetState() == taskPending:
		return nil
	}
	return NewError(ErrTypeUnauthorized, "cell %q may not change task %q: it is %s on cell %q",
		a.cell, t.GetTaskGuid(), TaskStateName(t.GetState()), t.GetCellId())
}

// MayReadTask checks that a cell reads only a task placed on its cell.
func (a Actor) MayReadTask(t *modelsv1.Task) error {
	if !a.isCell || a.holds(t.GetCellId()) {
		return nil
	}
	return NewError(ErrTypeUnauthorized, "cell %q may not read task %q: it is not on that cell", a.cell, t.GetTaskGuid())
}
