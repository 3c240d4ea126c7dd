package output

import modelsv1 "drover.dev/proto/gen/drover/models/v1"

// EventProcessGUID is the process guid an LRP event is about, "" for other events.
func EventProcessGUID(e *modelsv1.Event) string {
	switch {
	case e.GetDesiredLrpCreated() != nil:
		return e.GetDesiredLrpCreated().GetDesiredLrp().GetProcessGuid()
	case e.GetDesiredLrpChanged() != nil:
		return e.GetDesiredLrpChanged().GetAfter().GetProcessGuid()
	case e.GetDesiredLrpRemoved() != nil:
		return e.GetDesiredLrpRemoved().GetDesiredLrp().GetProcessGuid()
	case e.GetActualLrpInstanceCreated() != nil:
		return e.GetActualLrpInstanceCreated().GetActualLrp().GetProcessGuid()
	case e.GetActualLrpInstanceChanged() != nil:
		return e.GetActualLrpInstanceChanged().GetActualLrpKey().GetProcessGuid()
	case e.GetActualLrpInstanceRemoved() != nil:
		return e.GetActualLrpInstanceRemoved().GetActualLrp().GetProcessGuid()
	case e.GetActualLrpCrashed() != nil:
		return e.GetActualLrpCrashed().GetActualLrpKey().GetProcessGuid()
	case e.GetExecStarted() != nil:
		return e.GetExecStarted().GetActualLrpKey().GetProcessGuid()
	}
	return ""
}
