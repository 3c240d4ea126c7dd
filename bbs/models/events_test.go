package models_test

import (
	"testing"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// actual builds an ORDINARY ActualLRP row of index 0 of "pg" in the given state;
// claimed and running rows run as instance ig on cell.
func actual(state modelsv1.ActualLRPState, ig, cell string, tag uint32) *modelsv1.ActualLRP {
	a := &modelsv1.ActualLRP{
		ProcessGuid: "pg", Index: 0, Domain: "d", State: state, Since: int64(tag) + 1,
		InstanceGuid: ig, CellId: cell, ModificationTag: &modelsv1.ModificationTag{Epoch: "e", Index: tag},
		Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY,
	}
	if state == running {
		a.NetInfo = &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1"}
	}
	return a
}

func TestActualLRPEvents(t *testing.T) {
	unclaimedRow := actual(unclaimed, "", "", 0)
	claimedRow := actual(claimed, "ig-1", "cell-1", 1)
	runningRow := actual(running, "ig-1", "cell-1", 2)
	crashedRow := actual(crashed, "", "", 3)
	crashedRow.CrashCount = 3
	unclaimedAfterCrash := actual(unclaimed, "", "", 3)
	unclaimedAfterCrash.CrashCount = 1
	failedRow := actual(unclaimed, "", "", 1)
	failedRow.PlacementError = "insufficient resources"
	evacuating := proto.CloneOf(runningRow)
	evacuating.Presence = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING
	evacuating.ModificationTag.Index++
	onOtherCell := actual(running, "ig-2", "cell-2", 5)
	routesOnly := proto.CloneOf(runningRow)
	routesOnly.InternalRoutes = []string{"app.apps.internal"}

	cases := []struct {
		name          string
		before, after *modelsv1.ActualLRP
		want          []string
	}{
		{"both nil", nil, nil, nil},
		{"created", nil, unclaimedRow, []string{"actual_lrp_instance_created"}},
		{"removed", runningRow, nil, []string{"actual_lrp_instance_removed"}},
		{"claim is a change", unclaimedRow, claimedRow, []string{"actual_lrp_instance_changed"}},
		{"start is a change", claimedRow, runningRow, []string{"actual_lrp_instance_changed"}},
		{"start of an unclaimed row is a change", unclaimedRow, runningRow, []string{"actual_lrp_instance_changed"}},
		{"placement error is a change", unclaimedRow, failedRow, []string{"actual_lrp_instance_changed"}},
		{"evacuation is a change", runningRow, evacuating, []string{"actual_lrp_instance_changed"}},
		{"crash to CRASHED clears the key", runningRow, crashedRow, []string{"actual_lrp_instance_removed", "actual_lrp_instance_created"}},
		{"crash with immediate restart", runningRow, unclaimedAfterCrash, []string{"actual_lrp_instance_removed", "actual_lrp_instance_created"}},
		{"unclaim of a claimed row", claimedRow, actual(unclaimed, "", "", 2), []string{"actual_lrp_instance_removed", "actual_lrp_instance_created"}},
		{"restart of a crashed row keeps the empty key", crashedRow, actual(unclaimed, "", "", 4), []string{"actual_lrp_instance_changed"}},
		{"another instance takes over, running first", runningRow, onOtherCell, []string{"actual_lrp_instance_created", "actual_lrp_instance_removed"}},
		{"another instance claims", claimedRow, actual(claimed, "ig-2", "cell-2", 2), []string{"actual_lrp_instance_removed", "actual_lrp_instance_created"}},
		{"nothing changed", runningRow, proto.CloneOf(runningRow), nil},
		{"outside ActualLRPInfo only", runningRow, routesOnly, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events := models.ActualLRPEvents(tc.before, tc.after)
			var types []string
			for _, e := range events {
				types = append(types, models.EventType(e))
				require.Zero(t, e.GetSequence())
			}
			require.Equal(t, tc.want, types)
		})
	}
}

func TestActualLRPEventPayloads(t *testing.T) {
	claimedRow := actual(claimed, "ig-1", "cell-1", 1)
	runningRow := actual(running, "ig-1", "cell-1", 2)

	changed := models.ActualLRPEvents(claimedRow, runningRow)[0].GetActualLrpInstanceChanged()
	require.True(t, proto.Equal(&modelsv1.ActualLRPKey{ProcessGuid: "pg", Index: 0, Domain: "d"}, changed.GetActualLrpKey()))
	require.True(t, proto.Equal(&modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig-1", CellId: "cell-1"}, changed.GetActualLrpInstanceKey()))
	require.True(t, proto.Equal(models.ActualLRPInfoOf(claimedRow), changed.GetBefore()))
	require.True(t, proto.Equal(models.ActualLRPInfoOf(runningRow), changed.GetAfter()))

	claimedFromUnclaimed := models.ActualLRPEvents(actual(unclaimed, "", "", 0), claimedRow)[0].GetActualLrpInstanceChanged()
	require.Equal(t, "cell-1", claimedFromUnclaimed.GetActualLrpInstanceKey().GetCellId(), "a claim carries the new key")

	crashedRow := actual(crashed, "", "", 3)
	evs := models.ActualLRPEvents(runningRow, crashedRow)
	require.True(t, proto.Equal(runningRow, evs[0].GetActualLrpInstanceRemoved().GetActualLrp()))
	require.True(t, proto.Equal(crashedRow, evs[1].GetActualLrpInstanceCreated().GetActualLrp()))

	// Events copy their input.
	runningRow.CellId = "changed"
	require.Equal(t, "cell-1", evs[0].GetActualLrpInstanceRemoved().GetActualLrp().GetCellId())
}

func TestActualLRPInfoOf(t *testing.T) {
	require.Nil(t, models.ActualLRPInfoOf(nil))
	a := &modelsv1.ActualLRP{
		ProcessGuid: "pg", InstanceGuid: "ig", CellId: "c",
		NetInfo:    &modelsv1.ActualLRPNetInfo{Address: "1.2.3.4", InstanceAddress: "10.0.0.2", PreferredAddress: modelsv1.PreferredAddress_PREFERRED_ADDRESS_HOST},
		CrashCount: 2, CrashReason: "oom", PlacementError: "pe", State: running, Since: 9,
		ModificationTag: &modelsv1.ModificationTag{Epoch: "e", Index: 3}, Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT,
		Routable: true, AvailabilityZone: "z1",
	}
	info := models.ActualLRPInfoOf(a)
	requireAllFieldsSet(t, info)
	require.True(t, proto.Equal(&modelsv1.ActualLRPInfo{
		NetInfo: a.NetInfo, CrashCount: 2, CrashReason: "oom", PlacementError: "pe", State: running, Since: 9,
		ModificationTag: a.ModificationTag, Presence: a.Presence, Routable: true, AvailabilityZone: "z1",
	}, info))
	info.NetInfo.Address = "changed"
	require.Equal(t, "1.2.3.4", a.NetInfo.Address)
}

func TestActualLRPCrashedEvent(t *testing.T) {
	before := actual(running, "ig-1", "cell-1", 2)
	after := actual(crashed, "", "", 3)
	after.CrashCount, after.CrashReason, after.Since = 3, "exit status 1", 42
	e := models.ActualLRPCrashedEvent(before, after)
	require.Equal(t, "actual_lrp_crashed", models.EventType(e))
	require.True(t, proto.Equal(&modelsv1.ActualLRPCrashedEvent{
		ActualLrpKey:         &modelsv1.ActualLRPKey{ProcessGuid: "pg", Index: 0, Domain: "d"},
		ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig-1", CellId: "cell-1"},
		CrashCount:           3, CrashReason: "exit status 1", Since: 42,
	}, e.GetActualLrpCrashed()))
	require.Equal(t, []string{"cell-1"}, models.EventCellIDs(e))
	require.Nil(t, models.ActualLRPCrashedEvent(nil, nil))
	require.Equal(t, "pg", models.ActualLRPCrashedEvent(before, nil).GetActualLrpCrashed().GetActualLrpKey().GetProcessGuid())

	// Crashed events come first when sorted with others.
	events := append(models.ActualLRPEvents(before, after), e)
	models.SortInstanceEvents(events)
	require.Equal(t, "actual_lrp_crashed", models.EventType(events[0]))
}

func TestEventTypesAndCells(t *testing.T) {
	lrp := seedDesiredLRP(t)
	task := &modelsv1.Task{TaskGuid: "tg", CellId: "cell-9"}
	runningRow := actual(running, "ig-1", "cell-1", 2)
	cases := []struct {
		event *modelsv1.Event
		typ   string
		cells []string
	}{
		{models.DesiredLRPCreatedEvent(lrp), "desired_lrp_created", nil},
		{models.DesiredLRPChangedEvent(lrp, lrp), "desired_lrp_changed", nil},
		{models.DesiredLRPRemovedEvent(lrp), "desired_lrp_removed", nil},
		{models.TaskCreatedEvent(task), "task_created", nil},
		{models.TaskChangedEvent(task, task), "task_changed", nil},
		{models.TaskRemovedEvent(task), "task_removed", nil},
		{models.ActualLRPEvents(nil, runningRow)[0], "actual_lrp_instance_created", []string{"cell-1"}},
		{models.ActualLRPEvents(nil, actual(unclaimed, "", "", 0))[0], "actual_lrp_instance_created", nil},
		{models.ActualLRPEvents(runningRow, nil)[0], "actual_lrp_instance_removed", []string{"cell-1"}},
		{models.ActualLRPEvents(actual(claimed, "ig-1", "cell-1", 1), runningRow)[0], "actual_lrp_instance_changed", []string{"cell-1"}},
		{&modelsv1.Event{}, "", nil},
		{nil, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			require.Equal(t, tc.typ, models.EventType(tc.event))
			require.Equal(t, tc.cells, models.EventCellIDs(tc.event))
		})
	}

	created := models.DesiredLRPCreatedEvent(lrp)
	changed := models.DesiredLRPChangedEvent(lrp, models.ApplyDesiredLRPUpdate(lrp, nil))
	lrp.Instances = 99
	require.Equal(t, int32(17), created.GetDesiredLrpCreated().GetDesiredLrp().GetInstances(), "events copy their input")
	require.Equal(t, uint32(1), changed.GetDesiredLrpChanged().GetAfter().GetModificationTag().GetIndex())
	require.Equal(t, "tg", models.TaskChangedEvent(nil, task).GetTaskChanged().GetAfter().GetTaskGuid())
}

func TestSortInstanceEvents(t *testing.T) {
	running1 := actual(running, "ig-1", "cell-1", 2)
	running2 := actual(running, "ig-2", "cell-2", 2)
	removed := models.ActualLRPEvents(running1, nil)[0]
	createdUnclaimed := models.ActualLRPEvents(nil, actual(unclaimed, "", "", 0))[0]
	createdRunning := models.ActualLRPEvents(nil, running2)[0]
	changedToRunning := models.ActualLRPEvents(actual(claimed, "ig-1", "cell-1", 1), running1)[0]
	crash := models.ActualLRPCrashedEvent(running1, actual(crashed, "", "", 3))
	events := []*modelsv1.Event{removed, createdUnclaimed, createdRunning, changedToRunning, crash}
	models.SortInstanceEvents(events)
	require.Equal(t, []*modelsv1.Event{crash, createdRunning, changedToRunning, removed, createdUnclaimed}, events)
}

func TestEventSubjects(t *testing.T) {
	key := &modelsv1.ActualLRPKey{ProcessGuid: "pg", Index: 1, Domain: "d"}
	cases := []struct {
		name          string
		event         *modelsv1.Event
		process, subj string
	}{
		{"desired", &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpRemoved{DesiredLrpRemoved: &modelsv1.DesiredLRPRemovedEvent{DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "pg"}}}}, "pg", "pg"},
		{"crash", &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpCrashed{ActualLrpCrashed: &modelsv1.ActualLRPCrashedEvent{ActualLrpKey: key}}}, "pg", "pg"},
		{"exec", &modelsv1.Event{Payload: &modelsv1.Event_ExecStarted{ExecStarted: &modelsv1.ExecStartedEvent{ActualLrpKey: key}}}, "pg", "pg"},
		{"task", &modelsv1.Event{Payload: &modelsv1.Event_TaskChanged{TaskChanged: &modelsv1.TaskChangedEvent{After: &modelsv1.Task{TaskGuid: "tg"}}}}, "", "tg"},
		{"nil", nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.process, models.EventProcessGUID(tc.event))
			require.Equal(t, tc.subj, models.EventSubject(tc.event))
		})
	}
}
