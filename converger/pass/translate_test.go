package pass

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/converger/plan"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Fixture rows and their expected conditions.
var (
	rowA = plan.Row{
		ProcessGUID: "web", Index: 3, Domain: "cf-apps", Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY,
		InstanceGUID: "ig-1", CellID: "cell-1", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING,
		Tag: plan.Tag{Epoch: "e-a", Index: 7},
	}
	rowS = plan.Row{
		ProcessGUID: "web", Index: 4, Domain: "cf-apps", Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT,
		State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED, Tag: plan.Tag{Epoch: "e-s", Index: 2},
	}
	condA = &bbsv1.LRPRowCondition{
		Key:      &modelsv1.ActualLRPKey{ProcessGuid: "web", Index: 3, Domain: "cf-apps"},
		Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING,
		ModificationTag: &modelsv1.ModificationTag{Epoch: "e-a", Index: 7},
	}
	condS = &bbsv1.LRPRowCondition{
		Key:      &modelsv1.ActualLRPKey{ProcessGuid: "web", Index: 4, Domain: "cf-apps"},
		Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED,
		ModificationTag: &modelsv1.ModificationTag{Epoch: "e-s", Index: 2},
	}
	taskT = plan.TaskRow{TaskGUID: "t-1", Domain: "d", CellID: "cell-1", State: modelsv1.TaskState_TASK_STATE_RUNNING, UpdatedAt: 1234}
	condT = &bbsv1.TaskRowCondition{TaskGuid: "t-1", State: modelsv1.TaskState_TASK_STATE_RUNNING, UpdatedAt: 1234}
)

func because(r string) plan.Because { return plan.Because{Reason: r} }

func TestLRPAction(t *testing.T) {
	tests := []struct {
		name   string
		action plan.Action
		want   *bbsv1.LRPAction
	}{
		{
			"create missing carries the key and the desired tag",
			plan.CreateMissing{ProcessGUID: "web", Index: 2, Domain: "cf-apps", DesiredTag: plan.Tag{Epoch: "d", Index: 9}, Because: because("r1")},
			&bbsv1.LRPAction{Reason: "r1", Action: &bbsv1.LRPAction_CreateMissing{CreateMissing: &bbsv1.CreateMissingLRPAction{
				Key:                    &modelsv1.ActualLRPKey{ProcessGuid: "web", Index: 2, Domain: "cf-apps"},
				DesiredModificationTag: &modelsv1.ModificationTag{Epoch: "d", Index: 9},
			}}},
		},
		{"unclaim stale", plan.Unclaim{Row: rowA, Cause: plan.UnclaimStale, Because: because("r2")},
			&bbsv1.LRPAction{Reason: "r2", Action: &bbsv1.LRPAction_Unclaim{Unclaim: condA}}},
		{"unclaim crashed", plan.Unclaim{Row: rowA, Cause: plan.UnclaimCrashed, Because: because("r3")},
			&bbsv1.LRPAction{Reason: "r3", Action: &bbsv1.LRPAction_Unclaim{Unclaim: condA}}},
		{"mark suspect", plan.MarkSuspect{Row: rowA, Because: because("r4")},
			&bbsv1.LRPAction{Reason: "r4", Action: &bbsv1.LRPAction_MarkSuspect{MarkSuspect: condA}}},
		{"unclaim replacement", plan.UnclaimReplacement{Row: rowA, Because: because("r5")},
			&bbsv1.LRPAction{Reason: "r5", Action: &bbsv1.LRPAction_UnclaimReplacement{UnclaimReplacement: condA}}},
		{"remove suspect", plan.RemoveSuspect{Row: rowS, Cause: plan.RemoveSuspectReplaced, Because: because("r6")},
			&bbsv1.LRPAction{Reason: "r6", Action: &bbsv1.LRPAction_Remove{Remove: condS}}},
		{"remove evacuating", plan.RemoveEvacuating{Row: rowA, Because: because("r7")},
			&bbsv1.LRPAction{Reason: "r7", Action: &bbsv1.LRPAction_Remove{Remove: condA}}},
		{"promote suspect with replacement", plan.PromoteSuspect{Row: rowS, Replacement: &rowA, Because: because("r8")},
			&bbsv1.LRPAction{Reason: "r8", Action: &bbsv1.LRPAction_PromoteSuspect{PromoteSuspect: &bbsv1.PromoteSuspectLRPAction{Suspect: condS, Replacement: condA}}}},
		{"promote suspect without replacement", plan.PromoteSuspect{Row: rowS, Because: because("r9")},
			&bbsv1.LRPAction{Reason: "r9", Action: &bbsv1.LRPAction_PromoteSuspect{PromoteSuspect: &bbsv1.PromoteSuspectLRPAction{Suspect: condS}}}},
		{"retire", plan.Retire{Row: rowA, Cause: plan.RetireNoDesired, Because: because("r10")},
			&bbsv1.LRPAction{Reason: "r10", Action: &bbsv1.LRPAction_Retire{Retire: condA}}},
		{"a task action is not an LRP action", plan.KickTask{TaskRow: taskT}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LRPAction(tt.action)
			if tt.want == nil {
				assert.Nil(t, got)
				return
			}
			assert.True(t, proto.Equal(tt.want, got), "got %v", got)
		})
	}
}

func TestTaskAction(t *testing.T) {
	tests := []struct {
		name   string
		action plan.Action
		want   *bbsv1.TaskAction
	}{
		{"fail carries the failure reason", plan.FailTask{TaskRow: taskT, FailureReason: plan.FailureCellVanished, Because: because("t1")},
			&bbsv1.TaskAction{Reason: "t1", Action: &bbsv1.TaskAction_Fail{Fail: &bbsv1.FailTaskAction{Task: condT, FailureReason: plan.FailureCellVanished}}}},
		{"kick", plan.KickTask{TaskRow: taskT, Because: because("t2")},
			&bbsv1.TaskAction{Reason: "t2", Action: &bbsv1.TaskAction_Kick{Kick: condT}}},
		{"demote resolving", plan.DemoteResolving{TaskRow: taskT, Because: because("t3")},
			&bbsv1.TaskAction{Reason: "t3", Action: &bbsv1.TaskAction_DemoteResolving{DemoteResolving: condT}}},
		{"delete completed", plan.DeleteCompleted{TaskRow: taskT, Because: because("t4")},
			&bbsv1.TaskAction{Reason: "t4", Action: &bbsv1.TaskAction_DeleteCompleted{DeleteCompleted: condT}}},
		{"retry callback", plan.RetryCallback{TaskRow: taskT, CallbackURL: "https://cb", Because: because("t5")},
			&bbsv1.TaskAction{Reason: "t5", Action: &bbsv1.TaskAction_RetryCallback{RetryCallback: condT}}},
		{"an LRP action is not a task action", plan.Retire{Row: rowA}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TaskAction(tt.action)
			if tt.want == nil {
				assert.Nil(t, got)
				return
			}
			assert.True(t, proto.Equal(tt.want, got), "got %v", got)
		})
	}
}

func TestTranslateKeepsOrderAndSplits(t *testing.T) {
	actions := []plan.Action{
		plan.Retire{Row: rowA, Because: because("a")},
		plan.KickTask{TaskRow: taskT, Because: because("b")},
		plan.MarkSuspect{Row: rowA, Because: because("c")},
		plan.DeleteCompleted{TaskRow: taskT, Because: because("d")},
	}
	lrps, tasks := Translate(actions)
	require.Len(t, lrps, 2)
	require.Len(t, tasks, 2)
	assert.Equal(t, []string{"a", "c"}, []string{lrps[0].Proto.GetReason(), lrps[1].Proto.GetReason()})
	assert.Equal(t, []string{"b", "d"}, []string{tasks[0].Proto.GetReason(), tasks[1].Proto.GetReason()})
	assert.Equal(t, actions[2], lrps[1].Action)
	assert.Equal(t, actions[3], tasks[1].Action)
}
