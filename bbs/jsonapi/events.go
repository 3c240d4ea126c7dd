package jsonapi

import (
	"encoding/json"
	"fmt"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Event is one committed change as JSON: its sequence (the SSE id), its type (the SSE
// event name, from models.EventType) and its payload in the view shapes of this package.
type Event struct {
	Sequence  uint64          `json:"sequence"`
	Type      string          `json:"type"`
	CreatedAt int64           `json:"created_at,omitempty"`
	TraceID   string          `json:"trace_id,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// DesiredLRPPayload carries the DesiredLRP of a created or removed event.
type DesiredLRPPayload struct {
	DesiredLRP json.RawMessage `json:"desired_lrp"`
}

// DesiredLRPChangePayload carries a DesiredLRP before and after an update.
type DesiredLRPChangePayload struct {
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// ActualLRPPayload carries the ActualLRP of a created or removed event.
type ActualLRPPayload struct {
	ActualLRP ActualLRP `json:"actual_lrp"`
}

// ActualLRPChangePayload carries an ActualLRP before and after a change.
type ActualLRPChangePayload struct {
	Before ActualLRP `json:"before"`
	After  ActualLRP `json:"after"`
}

// ActualLRPCrashPayload says which instance crashed, how often and why.
type ActualLRPCrashPayload struct {
	ProcessGUID  string `json:"process_guid"`
	Index        int32  `json:"index"`
	Domain       string `json:"domain"`
	InstanceGUID string `json:"instance_guid"`
	CellID       string `json:"cell_id"`
	CrashCount   int32  `json:"crash_count"`
	CrashReason  string `json:"crash_reason,omitempty"`
	Since        int64  `json:"since"`
}

// TaskPayload carries the task of a created or removed event.
type TaskPayload struct {
	Task Task `json:"task"`
}

// TaskChangePayload carries a task before and after a change.
type TaskChangePayload struct {
	Before Task `json:"before"`
	After  Task `json:"after"`
}

// EventView converts an event; a nil event or one without payload gets "{}" as data.
func EventView(e *modelsv1.Event) (Event, error) {
	payload, err := eventPayload(e)
	if err != nil {
		return Event{}, fmt.Errorf("event %d: %w", e.GetSequence(), err)
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return Event{}, fmt.Errorf("event %d: encoding payload: %w", e.GetSequence(), err)
	}
	return Event{
		Sequence:  e.GetSequence(),
		Type:      models.EventType(e),
		CreatedAt: e.GetCreatedAt(),
		TraceID:   e.GetTraceId(),
		Data:      data,
	}, nil
}

// eventPayload builds the JSON-ready payload of an event.
func eventPayload(e *modelsv1.Event) (any, error) {
	switch p := e.GetPayload().(type) {
	case *modelsv1.Event_DesiredLrpCreated:
		lrp, err := EncodeDesiredLRP(p.DesiredLrpCreated.GetDesiredLrp())
		return DesiredLRPPayload{DesiredLRP: lrp}, err
	case *modelsv1.Event_DesiredLrpRemoved:
		lrp, err := EncodeDesiredLRP(p.DesiredLrpRemoved.GetDesiredLrp())
		return DesiredLRPPayload{DesiredLRP: lrp}, err
	case *modelsv1.Event_DesiredLrpChanged:
		before, err := EncodeDesiredLRP(p.DesiredLrpChanged.GetBefore())
		if err != nil {
			return nil, err
		}
		after, err := EncodeDesiredLRP(p.DesiredLrpChanged.GetAfter())
		return DesiredLRPChangePayload{Before: before, After: after}, err
	case *modelsv1.Event_ActualLrpInstanceCreated:
		return ActualLRPPayload{ActualLRP: ActualLRPView(p.ActualLrpInstanceCreated.GetActualLrp())}, nil
	case *modelsv1.Event_ActualLrpInstanceRemoved:
		return ActualLRPPayload{ActualLRP: ActualLRPView(p.ActualLrpInstanceRemoved.GetActualLrp())}, nil
	case *modelsv1.Event_ActualLrpInstanceChanged:
		c := p.ActualLrpInstanceChanged
		return ActualLRPChangePayload{
			Before: ActualLRPView(actualLRPFromInfo(c.GetActualLrpKey(), c.GetActualLrpInstanceKey(), c.GetBefore())),
			After:  ActualLRPView(actualLRPFromInfo(c.GetActualLrpKey(), c.GetActualLrpInstanceKey(), c.GetAfter())),
		}, nil
	case *modelsv1.Event_ActualLrpCrashed:
		return crashPayload(p.ActualLrpCrashed), nil
	case *modelsv1.Event_TaskCreated:
		task, err := TaskView(p.TaskCreated.GetTask())
		return TaskPayload{Task: task}, err
	case *modelsv1.Event_TaskRemoved:
		task, err := TaskView(p.TaskRemoved.GetTask())
		return TaskPayload{Task: task}, err
	case *modelsv1.Event_ExecStarted:
		return execStartedPayload(p.ExecStarted), nil
	case *modelsv1.Event_TaskChanged:
		before, err := TaskView(p.TaskChanged.GetBefore())
		if err != nil {
			return nil, err
		}
		after, err := TaskView(p.TaskChanged.GetAfter())
		return TaskChangePayload{Before: before, After: after}, err
	default:
		return struct{}{}, nil
	}
}

// actualLRPFromInfo joins an instance's keys with one side of a change.
func actualLRPFromInfo(key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, info *modelsv1.ActualLRPInfo) *modelsv1.ActualLRP {
	return &modelsv1.ActualLRP{
		ProcessGuid:      key.GetProcessGuid(),
		Index:            key.GetIndex(),
		Domain:           key.GetDomain(),
		InstanceGuid:     instance.GetInstanceGuid(),
		CellId:           instance.GetCellId(),
		NetInfo:          info.GetNetInfo(),
		CrashCount:       info.GetCrashCount(),
		CrashReason:      info.GetCrashReason(),
		PlacementError:   info.GetPlacementError(),
		State:            info.GetState(),
		Since:            info.GetSince(),
		ModificationTag:  info.GetModificationTag(),
		Presence:         info.GetPresence(),
		Routable:         info.GetRoutable(),
		AvailabilityZone: info.GetAvailabilityZone(),
	}
}

func crashPayload(c *modelsv1.ActualLRPCrashedEvent) ActualLRPCrashPayload {
	return ActualLRPCrashPayload{
		ProcessGUID:  c.GetActualLrpKey().GetProcessGuid(),
		Index:        c.GetActualLrpKey().GetIndex(),
		Domain:       c.GetActualLrpKey().GetDomain(),
		InstanceGUID: c.GetActualLrpInstanceKey().GetInstanceGuid(),
		CellID:       c.GetActualLrpInstanceKey().GetCellId(),
		CrashCount:   c.GetCrashCount(),
		CrashReason:  c.GetCrashReason(),
		Since:        c.GetSince(),
	}
}

// ExecStartedPayload is an exec_started event: who ran what in which instance.
type ExecStartedPayload struct {
	ProcessGuid  string   `json:"process_guid"`
	Index        int32    `json:"index"`
	Domain       string   `json:"domain"`
	InstanceGuid string   `json:"instance_guid"`
	CellID       string   `json:"cell_id"`
	User         string   `json:"user"`
	Args         []string `json:"args"`
	TTY          bool     `json:"tty"`
}

func execStartedPayload(e *modelsv1.ExecStartedEvent) ExecStartedPayload {
	args := e.GetArgs()
	if args == nil {
		args = []string{}
	}
	return ExecStartedPayload{
		ProcessGuid: e.GetActualLrpKey().GetProcessGuid(), Index: e.GetActualLrpKey().GetIndex(),
		Domain: e.GetActualLrpKey().GetDomain(), InstanceGuid: e.GetActualLrpInstanceKey().GetInstanceGuid(),
		CellID: e.GetActualLrpInstanceKey().GetCellId(), User: e.GetUser(), Args: args, TTY: e.GetTty(),
	}
}
