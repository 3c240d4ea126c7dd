package events

import (
	"slices"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// passesCellFilter reports whether a subscriber filtering on cellID gets e: everything
// passes an empty filter, desired-LRP and task events always pass, and instance events
// pass when they concern that cell.
func passesCellFilter(e *modelsv1.Event, cellID string) bool {
	if cellID == "" || !isInstanceEvent(e) {
		return true
	}
	return slices.Contains(models.EventCellIDs(e), cellID)
}

// isInstanceEvent reports whether e is about an ActualLRP row.
func isInstanceEvent(e *modelsv1.Event) bool {
	switch e.GetPayload().(type) {
	case *modelsv1.Event_ActualLrpInstanceCreated,
		*modelsv1.Event_ActualLrpInstanceChanged,
		*modelsv1.Event_ActualLrpInstanceRemoved,
		*modelsv1.Event_ActualLrpCrashed:
		return true
	default:
		return false
	}
}
