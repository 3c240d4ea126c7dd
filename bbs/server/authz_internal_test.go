package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestCellMaySee(t *testing.T) {
	task := func(cell string) *modelsv1.Task { return &modelsv1.Task{TaskGuid: "t", CellId: cell} }
	lrp := func(cell string) *modelsv1.ActualLRP { return &modelsv1.ActualLRP{ProcessGuid: "p", CellId: cell} }
	for _, tc := range []struct {
		name string
		e    *modelsv1.Event
		want bool
	}{
		{"its instance", &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceCreated{
			ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{ActualLrp: lrp("cell-1")}}}, true},
		{"another cell's instance", &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceRemoved{
			ActualLrpInstanceRemoved: &modelsv1.ActualLRPInstanceRemovedEvent{ActualLrp: lrp("cell-2")}}}, false},
		{"its crash", &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpCrashed{ActualLrpCrashed: &modelsv1.ActualLRPCrashedEvent{
			ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{CellId: "cell-1"}}}}, true},
		{"a task placed on it", &modelsv1.Event{Payload: &modelsv1.Event_TaskChanged{TaskChanged: &modelsv1.TaskChangedEvent{
			Before: task(""), After: task("cell-1")}}}, true},
		{"a task leaving it", &modelsv1.Event{Payload: &modelsv1.Event_TaskChanged{TaskChanged: &modelsv1.TaskChangedEvent{
			Before: task("cell-1"), After: task("")}}}, true},
		{"another cell's task", &modelsv1.Event{Payload: &modelsv1.Event_TaskChanged{TaskChanged: &modelsv1.TaskChangedEvent{
			Before: task(""), After: task("cell-2")}}}, false},
		{"a new PENDING task", &modelsv1.Event{Payload: &modelsv1.Event_TaskCreated{TaskCreated: &modelsv1.TaskCreatedEvent{Task: task("")}}}, false},
		{"a removed task of its own", &modelsv1.Event{Payload: &modelsv1.Event_TaskRemoved{TaskRemoved: &modelsv1.TaskRemovedEvent{Task: task("cell-1")}}}, true},
		{"a desired lrp (every app's run info)", &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpCreated{
			DesiredLrpCreated: &modelsv1.DesiredLRPCreatedEvent{DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "p"}}}}, false},
		{"a desired lrp change", &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpChanged{DesiredLrpChanged: &modelsv1.DesiredLRPChangedEvent{}}}, false},
		{"a desired lrp removal", &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpRemoved{DesiredLrpRemoved: &modelsv1.DesiredLRPRemovedEvent{}}}, false},
		{"an empty event", &modelsv1.Event{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, cellMaySee(tc.e, "cell-1")) })
	}
}
