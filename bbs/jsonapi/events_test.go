package jsonapi_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestEventView(t *testing.T) {
	lrp := &modelsv1.ActualLRP{ProcessGuid: "p", Index: 1, Domain: "d", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED,
		Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY, Since: 5}
	lrpJSON := `{"process_guid": "p", "domain": "d", "index": 1, "state": "UNCLAIMED", "since": 5, "presence": "ORDINARY", "routable": false}`
	task := &modelsv1.Task{TaskGuid: "t", Domain: "d", State: modelsv1.TaskState_TASK_STATE_PENDING}
	taskJSON := `{"task_guid": "t", "domain": "d", "state": "PENDING", "failed": false, "created_at": 0, "updated_at": 0}`
	running := &modelsv1.Task{TaskGuid: "t", Domain: "d", State: modelsv1.TaskState_TASK_STATE_RUNNING, CellId: "c"}
	runningJSON := `{"task_guid": "t", "domain": "d", "state": "RUNNING", "cell_id": "c", "failed": false, "created_at": 0, "updated_at": 0}`
	key := &modelsv1.ActualLRPKey{ProcessGuid: "p", Index: 1, Domain: "d"}
	instance := &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "c"}

	tests := []struct {
		name     string
		event    *modelsv1.Event
		wantType string
		wantData string
	}{
		{
			name: "desired created",
			event: &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpCreated{DesiredLrpCreated: &modelsv1.DesiredLRPCreatedEvent{
				DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "p", Domain: "d", Instances: 2}}}},
			wantType: models.EventTypeDesiredLRPCreated,
			wantData: `{"desired_lrp": {"process_guid": "p", "domain": "d", "instances": 2}}`,
		},
		{
			name: "desired changed",
			event: &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpChanged{DesiredLrpChanged: &modelsv1.DesiredLRPChangedEvent{
				Before: &modelsv1.DesiredLRP{ProcessGuid: "p", Instances: 2}, After: &modelsv1.DesiredLRP{ProcessGuid: "p"}}}},
			wantType: models.EventTypeDesiredLRPChanged,
			wantData: `{"before": {"process_guid": "p", "instances": 2}, "after": {"process_guid": "p", "instances": 0}}`,
		},
		{
			name: "desired removed",
			event: &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpRemoved{DesiredLrpRemoved: &modelsv1.DesiredLRPRemovedEvent{
				DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "p", Instances: 1}}}},
			wantType: models.EventTypeDesiredLRPRemoved,
			wantData: `{"desired_lrp": {"process_guid": "p", "instances": 1}}`,
		},
		{
			name: "instance created",
			event: &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceCreated{ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{
				ActualLrp: lrp}}},
			wantType: models.EventTypeActualLRPInstanceCreated,
			wantData: `{"actual_lrp": ` + lrpJSON + `}`,
		},
		{
			name: "instance removed",
			event: &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceRemoved{ActualLrpInstanceRemoved: &modelsv1.ActualLRPInstanceRemovedEvent{
				ActualLrp: lrp}}},
			wantType: models.EventTypeActualLRPInstanceRemoved,
			wantData: `{"actual_lrp": ` + lrpJSON + `}`,
		},
		{
			name: "instance changed joins keys with each side",
			event: &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceChanged{ActualLrpInstanceChanged: &modelsv1.ActualLRPInstanceChangedEvent{
				ActualLrpKey: key, ActualLrpInstanceKey: instance,
				Before: &modelsv1.ActualLRPInfo{State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED, Since: 1,
					Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY},
				After: &modelsv1.ActualLRPInfo{State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, Since: 2, Routable: true,
					Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY,
					NetInfo:  &modelsv1.ActualLRPNetInfo{Address: "1.2.3.4", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}},
			}}},
			wantType: models.EventTypeActualLRPInstanceChanged,
			wantData: `{"before": {"process_guid": "p", "instance_guid": "ig", "cell_id": "c", "domain": "d", "index": 1,
				"state": "CLAIMED", "since": 1, "presence": "ORDINARY", "routable": false},
				"after": {"process_guid": "p", "instance_guid": "ig", "cell_id": "c", "domain": "d", "index": 1,
				"state": "RUNNING", "address": "1.2.3.4", "ports": [{"container_port": 8080, "host_port": 61000}],
				"since": 2, "presence": "ORDINARY", "routable": true}}`,
		},
		{
			name: "crashed",
			event: &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpCrashed{ActualLrpCrashed: &modelsv1.ActualLRPCrashedEvent{
				ActualLrpKey: key, ActualLrpInstanceKey: instance, CrashCount: 2, CrashReason: "exit 1", Since: 8}}},
			wantType: models.EventTypeActualLRPCrashed,
			wantData: `{"process_guid": "p", "index": 1, "domain": "d", "instance_guid": "ig", "cell_id": "c",
				"crash_count": 2, "crash_reason": "exit 1", "since": 8}`,
		},
		{
			name:     "task created",
			event:    &modelsv1.Event{Payload: &modelsv1.Event_TaskCreated{TaskCreated: &modelsv1.TaskCreatedEvent{Task: task}}},
			wantType: models.EventTypeTaskCreated,
			wantData: `{"task": ` + taskJSON + `}`,
		},
		{
			name: "task changed",
			event: &modelsv1.Event{Payload: &modelsv1.Event_TaskChanged{TaskChanged: &modelsv1.TaskChangedEvent{
				Before: task, After: running}}},
			wantType: models.EventTypeTaskChanged,
			wantData: `{"before": ` + taskJSON + `, "after": ` + runningJSON + `}`,
		},
		{
			name:     "task removed",
			event:    &modelsv1.Event{Payload: &modelsv1.Event_TaskRemoved{TaskRemoved: &modelsv1.TaskRemovedEvent{Task: running}}},
			wantType: models.EventTypeTaskRemoved,
			wantData: `{"task": ` + runningJSON + `}`,
		},
		{
			name:     "no payload",
			event:    &modelsv1.Event{},
			wantType: "",
			wantData: `{}`,
		},
		{
			name:     "nil",
			event:    nil,
			wantType: "",
			wantData: `{}`,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := uint64(100 + i)
			if tt.event != nil {
				tt.event.Sequence = seq
				tt.event.CreatedAt = 77
			} else {
				seq = 0
			}
			view, err := jsonapi.EventView(tt.event)
			require.NoError(t, err)
			require.Equal(t, seq, view.Sequence)
			require.Equal(t, tt.wantType, view.Type)
			require.JSONEq(t, tt.wantData, string(view.Data))

			out, err := json.Marshal(view)
			require.NoError(t, err)
			var round jsonapi.Event
			require.NoError(t, json.Unmarshal(out, &round))
			require.Equal(t, seq, round.Sequence)
			require.JSONEq(t, tt.wantData, string(round.Data))
		})
	}
}
