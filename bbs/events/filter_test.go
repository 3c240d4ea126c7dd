package events

import (
	"testing"

	"github.com/stretchr/testify/require"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestPassesCellFilter(t *testing.T) {
	onCell := func(cell string) *modelsv1.ActualLRP {
		return &modelsv1.ActualLRP{ProcessGuid: "p", Domain: "d", CellId: cell, InstanceGuid: "i-" + cell}
	}
	ik := func(cell string) *modelsv1.ActualLRPInstanceKey {
		return &modelsv1.ActualLRPInstanceKey{InstanceGuid: "i-" + cell, CellId: cell}
	}
	created := &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceCreated{
		ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{ActualLrp: onCell("a")}}}
	unclaimed := &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceCreated{
		ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{ActualLrp: onCell("")}}}
	changed := &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceChanged{
		ActualLrpInstanceChanged: &modelsv1.ActualLRPInstanceChangedEvent{ActualLrpInstanceKey: ik("a")}}}
	removed := &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceRemoved{
		ActualLrpInstanceRemoved: &modelsv1.ActualLRPInstanceRemovedEvent{ActualLrp: onCell("a")}}}
	crashed := &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpCrashed{
		ActualLrpCrashed: &modelsv1.ActualLRPCrashedEvent{ActualLrpInstanceKey: ik("a")}}}
	desired := &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpCreated{
		DesiredLrpCreated: &modelsv1.DesiredLRPCreatedEvent{DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "p"}}}}
	task := &modelsv1.Event{Payload: &modelsv1.Event_TaskChanged{
		TaskChanged: &modelsv1.TaskChangedEvent{After: &modelsv1.Task{TaskGuid: "t", CellId: "b"}}}}

	cases := []struct {
		name   string
		event  *modelsv1.Event
		cell   string
		passes bool
	}{
		{"no filter", created, "", true},
		{"created on the cell", created, "a", true},
		{"created on another cell", created, "b", false},
		{"unclaimed row has no cell", unclaimed, "a", false},
		{"changed on the cell", changed, "a", true},
		{"changed on another cell", changed, "b", false},
		{"removed on the cell", removed, "a", true},
		{"removed on another cell", removed, "b", false},
		{"crashed on the cell", crashed, "a", true},
		{"crashed on another cell", crashed, "b", false},
		{"desired events always pass", desired, "b", true},
		{"task events always pass", task, "a", true},
		{"empty event", &modelsv1.Event{}, "a", true},
		{"nil event", nil, "a", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.passes, passesCellFilter(tc.event, tc.cell))
		})
	}
}
