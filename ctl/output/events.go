package output

import (
	"fmt"
	"strings"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// EventLine is one human-readable line for an event:
// "SEQUENCE  TIME  TYPE  SUMMARY", with fixed-width leading columns so a stream lines up.
func EventLine(e *modelsv1.Event) string {
	line := fmt.Sprintf("%-8d  %-20s  %-27s  %s", e.GetSequence(), Timestamp(e.GetCreatedAt()), models.EventType(e), Printable(EventSummary(e)))
	return strings.TrimRight(line, " ")
}

// EventSummary names what an event is about and what changed, in a few words.
func EventSummary(e *modelsv1.Event) string {
	switch {
	case e.GetDesiredLrpCreated() != nil:
		d := e.GetDesiredLrpCreated().GetDesiredLrp()
		return fmt.Sprintf("%s domain=%s instances=%d", d.GetProcessGuid(), d.GetDomain(), d.GetInstances())
	case e.GetDesiredLrpChanged() != nil:
		before, after := e.GetDesiredLrpChanged().GetBefore(), e.GetDesiredLrpChanged().GetAfter()
		return fmt.Sprintf("%s instances=%s", after.GetProcessGuid(), change(Int(before.GetInstances()), Int(after.GetInstances())))
	case e.GetDesiredLrpRemoved() != nil:
		return e.GetDesiredLrpRemoved().GetDesiredLrp().GetProcessGuid()
	case e.GetActualLrpInstanceCreated() != nil:
		return actualLRPSummary(e.GetActualLrpInstanceCreated().GetActualLrp())
	case e.GetActualLrpInstanceRemoved() != nil:
		return actualLRPSummary(e.GetActualLrpInstanceRemoved().GetActualLrp())
	case e.GetActualLrpInstanceChanged() != nil:
		return actualLRPChangedSummary(e.GetActualLrpInstanceChanged())
	case e.GetActualLrpCrashed() != nil:
		c := e.GetActualLrpCrashed()
		return fields(
			instanceName(c.GetActualLrpKey().GetProcessGuid(), c.GetActualLrpKey().GetIndex()),
			kv("cell", c.GetActualLrpInstanceKey().GetCellId()),
			kv("crashes", Int(c.GetCrashCount())),
			kv("reason", quoted(c.GetCrashReason())),
		)
	case e.GetTaskCreated() != nil:
		t := e.GetTaskCreated().GetTask()
		return fields(t.GetTaskGuid(), kv("domain", t.GetDomain()))
	case e.GetTaskChanged() != nil:
		before, after := e.GetTaskChanged().GetBefore(), e.GetTaskChanged().GetAfter()
		return fields(
			after.GetTaskGuid(),
			change(models.TaskStateName(before.GetState()), models.TaskStateName(after.GetState())),
			kv("cell", after.GetCellId()),
			kv("failure", quoted(after.GetFailureReason())),
		)
	case e.GetTaskRemoved() != nil:
		return e.GetTaskRemoved().GetTask().GetTaskGuid()
	case e.GetExecStarted() != nil:
		x := e.GetExecStarted()
		return fields(
			instanceName(x.GetActualLrpKey().GetProcessGuid(), x.GetActualLrpKey().GetIndex()),
			kv("cell", x.GetActualLrpInstanceKey().GetCellId()),
			kv("user", quoted(x.GetUser())),
			kv("args", quoted(strings.Join(x.GetArgs(), " "))),
			map[bool]string{true: "tty"}[x.GetTty()],
		)
	default:
		return ""
	}
}

func actualLRPSummary(a *modelsv1.ActualLRP) string {
	return fields(
		instanceName(a.GetProcessGuid(), a.GetIndex()),
		ActualLRPStateLabel(a),
		kv("cell", a.GetCellId()),
		kv("placement_error", quoted(a.GetPlacementError())),
	)
}

func actualLRPChangedSummary(c *modelsv1.ActualLRPInstanceChangedEvent) string {
	before, after := c.GetBefore(), c.GetAfter()
	beforeLabel := ActualLRPStateLabel(&modelsv1.ActualLRP{State: before.GetState(), Presence: before.GetPresence()})
	afterLabel := ActualLRPStateLabel(&modelsv1.ActualLRP{State: after.GetState(), Presence: after.GetPresence()})
	return fields(
		instanceName(c.GetActualLrpKey().GetProcessGuid(), c.GetActualLrpKey().GetIndex()),
		change(beforeLabel, afterLabel),
		kv("cell", c.GetActualLrpInstanceKey().GetCellId()),
		kv("address", after.GetNetInfo().GetAddress()),
		kv("placement_error", quoted(after.GetPlacementError())),
	)
}

// instanceName is "guid/index".
func instanceName(guid string, index int32) string {
	return fmt.Sprintf("%s/%d", guid, index)
}

// change is "a->b", or just "b" when nothing changed.
func change(before, after string) string {
	if before == after {
		return after
	}
	return before + "->" + after
}

// kv is "name=value", or empty when value is empty.
func kv(name, value string) string {
	if value == "" {
		return ""
	}
	return name + "=" + value
}

func quoted(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%q", s)
}

// fields joins the non-empty parts with single spaces.
func fields(parts ...string) string {
	kept := parts[:0]
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, " ")
}
