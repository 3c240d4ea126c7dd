package output_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/output"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestEventSummary(t *testing.T) {
	running := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	claimed := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	key := &modelsv1.ActualLRPKey{ProcessGuid: "web", Index: 2}
	tests := []struct {
		name  string
		event *modelsv1.Event
		want  string
	}{
		{
			name: "desired created",
			event: &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpCreated{DesiredLrpCreated: &modelsv1.DesiredLRPCreatedEvent{
				DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "web", Domain: "cf", Instances: 3},
			}}},
			want: "web domain=cf instances=3",
		},
		{
			name: "desired scaled",
			event: &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpChanged{DesiredLrpChanged: &modelsv1.DesiredLRPChangedEvent{
				Before: &modelsv1.DesiredLRP{ProcessGuid: "web", Instances: 3},
				After:  &modelsv1.DesiredLRP{ProcessGuid: "web", Instances: 5},
			}}},
			want: "web instances=3->5",
		},
		{
			name: "instance started",
			event: &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceChanged{ActualLrpInstanceChanged: &modelsv1.ActualLRPInstanceChangedEvent{
				ActualLrpKey:         key,
				ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{CellId: "cell-1"},
				Before:               &modelsv1.ActualLRPInfo{State: claimed},
				After:                &modelsv1.ActualLRPInfo{State: running, NetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1"}},
			}}},
			want: "web/2 CLAIMED->RUNNING cell=cell-1 address=10.0.0.1",
		},
		{
			name: "instance created unplaced",
			event: &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceCreated{ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{
				ActualLrp: &modelsv1.ActualLRP{ProcessGuid: "web", Index: 0, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED},
			}}},
			want: "web/0 UNCLAIMED",
		},
		{
			name: "crash",
			event: &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpCrashed{ActualLrpCrashed: &modelsv1.ActualLRPCrashedEvent{
				ActualLrpKey: key, ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{CellId: "cell-1"},
				CrashCount: 3, CrashReason: "exit status 137",
			}}},
			want: `web/2 cell=cell-1 crashes=3 reason="exit status 137"`,
		},
		{
			name: "task completed",
			event: &modelsv1.Event{Payload: &modelsv1.Event_TaskChanged{TaskChanged: &modelsv1.TaskChangedEvent{
				Before: &modelsv1.Task{TaskGuid: "t", State: modelsv1.TaskState_TASK_STATE_RUNNING},
				After:  &modelsv1.Task{TaskGuid: "t", State: modelsv1.TaskState_TASK_STATE_COMPLETED, CellId: "c", FailureReason: "oops"},
			}}},
			want: `t RUNNING->COMPLETED cell=c failure="oops"`,
		},
		{
			name:  "task removed",
			event: &modelsv1.Event{Payload: &modelsv1.Event_TaskRemoved{TaskRemoved: &modelsv1.TaskRemovedEvent{Task: &modelsv1.Task{TaskGuid: "t"}}}},
			want:  "t",
		},
		{name: "no payload", event: &modelsv1.Event{}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, output.EventSummary(tt.event))
		})
	}
}

func TestEventLine(t *testing.T) {
	e := &modelsv1.Event{
		Sequence:  42,
		CreatedAt: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC).UnixNano(),
		Payload: &modelsv1.Event_DesiredLrpRemoved{DesiredLrpRemoved: &modelsv1.DesiredLRPRemovedEvent{
			DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "web"},
		}},
	}
	line := output.EventLine(e)
	require.Equal(t, []string{"42", "2026-11-22T12:00:00Z", "desired_lrp_removed", "web"}, strings.Fields(line))
	require.True(t, strings.HasPrefix(line, "42        2026-11-22T12:00:00Z  desired_lrp_removed"), line)
}
