package models

import (
	"slices"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"google.golang.org/protobuf/proto"
)

// Diego's event type strings (reference/bbs.md §4.1).
const (
	EventTypeDesiredLRPCreated        = "desired_lrp_created"
	EventTypeDesiredLRPChanged        = "desired_lrp_changed"
	EventTypeDesiredLRPRemoved        = "desired_lrp_removed"
	EventTypeActualLRPInstanceCreated = "actual_lrp_instance_created"
	EventTypeActualLRPInstanceChanged = "actual_lrp_instance_changed"
	EventTypeActualLRPInstanceRemoved = "actual_lrp_instance_removed"
	EventTypeActualLRPCrashed         = "actual_lrp_crashed"
	EventTypeTaskCreated              = "task_created"
	EventTypeTaskChanged              = "task_changed"
	EventTypeTaskRemoved              = "task_removed"
	// EventTypeExecStarted is drover's own: an operator ran a process in an instance.
	EventTypeExecStarted = "exec_started"
)

// The event constructors below copy their arguments, so later changes to them do
// not leak into the event, and leave sequence and created_at 0 for the store to set.
// DesiredLRP and task events carry no image credentials (see credentials.go).

// DesiredLRPCreatedEvent reports that lrp was desired.
func DesiredLRPCreatedEvent(lrp *modelsv1.DesiredLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpCreated{
		DesiredLrpCreated: &modelsv1.DesiredLRPCreatedEvent{DesiredLrp: DesiredLRPWithoutImageCredentials(lrp)},
	}}
}

// DesiredLRPChangedEvent reports that a DesiredLRP was updated from before to after.
func DesiredLRPChangedEvent(before, after *modelsv1.DesiredLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpChanged{
		DesiredLrpChanged: &modelsv1.DesiredLRPChangedEvent{Before: DesiredLRPWithoutImageCredentials(before), After: DesiredLRPWithoutImageCredentials(after)},
	}}
}

// DesiredLRPRemovedEvent reports that lrp was removed.
func DesiredLRPRemovedEvent(lrp *modelsv1.DesiredLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpRemoved{
		DesiredLrpRemoved: &modelsv1.DesiredLRPRemovedEvent{DesiredLrp: DesiredLRPWithoutImageCredentials(lrp)},
	}}
}

// TaskCreatedEvent reports that task t was desired.
func TaskCreatedEvent(t *modelsv1.Task) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_TaskCreated{
		TaskCreated: &modelsv1.TaskCreatedEvent{Task: TaskWithoutImageCredentials(t)},
	}}
}

// ExecStartedEvent reports that user started args (with a terminal when tty) inside
// the instance of key and instance.
func ExecStartedEvent(key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, user string, args []string, tty bool) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_ExecStarted{ExecStarted: &modelsv1.ExecStartedEvent{
		ActualLrpKey: proto.CloneOf(key), ActualLrpInstanceKey: proto.CloneOf(instance),
		User: user, Args: slices.Clone(args), Tty: tty,
	}}}
}

// TaskChangedEvent reports that a task changed from before to after.
func TaskChangedEvent(before, after *modelsv1.Task) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_TaskChanged{
		TaskChanged: &modelsv1.TaskChangedEvent{Before: TaskWithoutImageCredentials(before), After: TaskWithoutImageCredentials(after)},
	}}
}

// TaskRemovedEvent reports that task t was deleted.
func TaskRemovedEvent(t *modelsv1.Task) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_TaskRemoved{
		TaskRemoved: &modelsv1.TaskRemovedEvent{Task: TaskWithoutImageCredentials(t)},
	}}
}

// actualLRPCreatedEvent reports that row a appeared.
func actualLRPCreatedEvent(a *modelsv1.ActualLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceCreated{
		ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{ActualLrp: proto.CloneOf(a)},
	}}
}

// actualLRPRemovedEvent reports that row a went away.
func actualLRPRemovedEvent(a *modelsv1.ActualLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceRemoved{
		ActualLrpInstanceRemoved: &modelsv1.ActualLRPInstanceRemovedEvent{ActualLrp: proto.CloneOf(a)},
	}}
}

// actualLRPChangedEvent reports that the instance of before and after changed.
func actualLRPChangedEvent(before, after *modelsv1.ActualLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceChanged{
		ActualLrpInstanceChanged: &modelsv1.ActualLRPInstanceChangedEvent{
			ActualLrpKey:         actualLRPKeyOf(after),
			ActualLrpInstanceKey: instanceKeyOf(after),
			Before:               ActualLRPInfoOf(before),
			After:                ActualLRPInfoOf(after),
		},
	}}
}

// ActualLRPEvents is the instance events that describe the change of one ActualLRP
// row from before to after (Diego's event calculator):
//   - before nil: created(after); after nil: removed(before);
//   - same key and instance key (or an instance key assigned to a row that had
//     none, as by a claim) with any change of ActualLRPInfo: changed;
//   - instance key changed or cleared: removed(before) and created(after);
//   - nothing changed, or both nil: no event.
//
// The events come in delivery order (see SortInstanceEvents).
func ActualLRPEvents(before, after *modelsv1.ActualLRP) []*modelsv1.Event {
	var events []*modelsv1.Event
	switch {
	case before == nil && after == nil:
		return nil
	case before == nil:
		events = append(events, actualLRPCreatedEvent(after))
	case after == nil:
		events = append(events, actualLRPRemovedEvent(before))
	case sameInstance(before, after):
		if proto.Equal(ActualLRPInfoOf(before), ActualLRPInfoOf(after)) {
			return nil
		}
		events = append(events, actualLRPChangedEvent(before, after))
	default:
		events = append(events, actualLRPRemovedEvent(before), actualLRPCreatedEvent(after))
	}
	SortInstanceEvents(events)
	return events
}

// sameInstance reports whether after is the same instance as before: the same key,
// and the same instance key or one newly assigned where there was none.
func sameInstance(before, after *modelsv1.ActualLRP) bool {
	if !proto.Equal(actualLRPKeyOf(before), actualLRPKeyOf(after)) {
		return false
	}
	beforeKey := instanceKeyOf(before)
	return instanceKeyEmpty(beforeKey) || proto.Equal(beforeKey, instanceKeyOf(after))
}

// SortInstanceEvents orders instance events for delivery as Diego does, keeping
// the order of equals: crashed events first, then created or changed events whose
// instance ends RUNNING, then the rest (removals and changes away from RUNNING),
// so that routes never go missing during a handover.
func SortInstanceEvents(events []*modelsv1.Event) {
	slices.SortStableFunc(events, func(a, b *modelsv1.Event) int {
		return instanceEventRank(b) - instanceEventRank(a)
	})
}

// instanceEventRank is 2 for crashed events, 1 for events that end RUNNING, else 0.
func instanceEventRank(e *modelsv1.Event) int {
	switch {
	case e.GetActualLrpCrashed() != nil:
		return 2
	case e.GetActualLrpInstanceCreated().GetActualLrp().GetState() == running,
		e.GetActualLrpInstanceChanged().GetAfter().GetState() == running:
		return 1
	default:
		return 0
	}
}

// ActualLRPCrashedEvent reports a crash: the key, the instance key the instance had
// before the crash, and the crash count, reason and time after it. Both nil gives nil.
func ActualLRPCrashedEvent(before, after *modelsv1.ActualLRP) *modelsv1.Event {
	if before == nil && after == nil {
		return nil
	}
	key := after
	if key == nil {
		key = before
	}
	return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpCrashed{
		ActualLrpCrashed: &modelsv1.ActualLRPCrashedEvent{
			ActualLrpKey:         actualLRPKeyOf(key),
			ActualLrpInstanceKey: instanceKeyOf(before),
			CrashCount:           after.GetCrashCount(),
			CrashReason:          after.GetCrashReason(),
			Since:                after.GetSince(),
		},
	}}
}

// ActualLRPInfoOf is the mutable part of a, as changed events carry it. nil gives nil.
func ActualLRPInfoOf(a *modelsv1.ActualLRP) *modelsv1.ActualLRPInfo {
	if a == nil {
		return nil
	}
	return &modelsv1.ActualLRPInfo{
		NetInfo:          proto.CloneOf(a.GetNetInfo()),
		CrashCount:       a.GetCrashCount(),
		CrashReason:      a.GetCrashReason(),
		State:            a.GetState(),
		PlacementError:   a.GetPlacementError(),
		Since:            a.GetSince(),
		ModificationTag:  proto.CloneOf(a.GetModificationTag()),
		Presence:         a.GetPresence(),
		Routable:         a.GetRoutable(),
		AvailabilityZone: a.GetAvailabilityZone(),
	}
}

func actualLRPKeyOf(a *modelsv1.ActualLRP) *modelsv1.ActualLRPKey {
	return &modelsv1.ActualLRPKey{ProcessGuid: a.GetProcessGuid(), Index: a.GetIndex(), Domain: a.GetDomain()}
}

func instanceKeyOf(a *modelsv1.ActualLRP) *modelsv1.ActualLRPInstanceKey {
	return &modelsv1.ActualLRPInstanceKey{InstanceGuid: a.GetInstanceGuid(), CellId: a.GetCellId()}
}

// EventProcessGUID is the process guid an LRP event (desired, actual, crash or exec) is
// about, "" for task events and nil.
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

// EventSubject is the process guid or task guid an event is about.
func EventSubject(e *modelsv1.Event) string {
	switch {
	case e.GetTaskCreated() != nil:
		return e.GetTaskCreated().GetTask().GetTaskGuid()
	case e.GetTaskChanged() != nil:
		return e.GetTaskChanged().GetAfter().GetTaskGuid()
	case e.GetTaskRemoved() != nil:
		return e.GetTaskRemoved().GetTask().GetTaskGuid()
	}
	return EventProcessGUID(e)
}

// EventType is Diego's type string of an event ("desired_lrp_created", ...), or ""
// for nil or an event without a payload.
func EventType(e *modelsv1.Event) string {
	switch e.GetPayload().(type) {
	case *modelsv1.Event_DesiredLrpCreated:
		return EventTypeDesiredLRPCreated
	case *modelsv1.Event_DesiredLrpChanged:
		return EventTypeDesiredLRPChanged
	case *modelsv1.Event_DesiredLrpRemoved:
		return EventTypeDesiredLRPRemoved
	case *modelsv1.Event_ActualLrpInstanceCreated:
		return EventTypeActualLRPInstanceCreated
	case *modelsv1.Event_ActualLrpInstanceChanged:
		return EventTypeActualLRPInstanceChanged
	case *modelsv1.Event_ActualLrpInstanceRemoved:
		return EventTypeActualLRPInstanceRemoved
	case *modelsv1.Event_ActualLrpCrashed:
		return EventTypeActualLRPCrashed
	case *modelsv1.Event_TaskCreated:
		return EventTypeTaskCreated
	case *modelsv1.Event_TaskChanged:
		return EventTypeTaskChanged
	case *modelsv1.Event_TaskRemoved:
		return EventTypeTaskRemoved
	case *modelsv1.Event_ExecStarted:
		return EventTypeExecStarted
	default:
		return ""
	}
}

// EventCellIDs is the cell an instance event concerns (for subscribers that filter
// by cell): the row's cell for created and removed events, the instance key's cell
// for changed and crashed events. It is empty for desired LRP and task events and
// for instances on no cell (UNCLAIMED, CRASHED).
func EventCellIDs(e *modelsv1.Event) []string {
	var cell string
	switch p := e.GetPayload().(type) {
	case *modelsv1.Event_ActualLrpInstanceCreated:
		cell = p.ActualLrpInstanceCreated.GetActualLrp().GetCellId()
	case *modelsv1.Event_ActualLrpInstanceRemoved:
		cell = p.ActualLrpInstanceRemoved.GetActualLrp().GetCellId()
	case *modelsv1.Event_ActualLrpInstanceChanged:
		cell = p.ActualLrpInstanceChanged.GetActualLrpInstanceKey().GetCellId()
	case *modelsv1.Event_ActualLrpCrashed:
		cell = p.ActualLrpCrashed.GetActualLrpInstanceKey().GetCellId()
	case *modelsv1.Event_ExecStarted:
		cell = p.ExecStarted.GetActualLrpInstanceKey().GetCellId()
	}
	if cell == "" {
		return nil
	}
	return []string{cell}
}
