package pass

import (
	"drover.dev/converger/plan"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Item pairs a plan action with the proto message sent to the BBS for it.
type Item[P any] struct {
	Action plan.Action
	Proto  P
}

// Translate splits actions (in apply order) into the LRP and the task actions of the
// BBS protocol, keeping their order. An action of an unknown type is left out.
func Translate(actions []plan.Action) (lrps []Item[*bbsv1.LRPAction], tasks []Item[*bbsv1.TaskAction]) {
	for _, a := range actions {
		if p := LRPAction(a); p != nil {
			lrps = append(lrps, Item[*bbsv1.LRPAction]{Action: a, Proto: p})
			continue
		}
		if p := TaskAction(a); p != nil {
			tasks = append(tasks, Item[*bbsv1.TaskAction]{Action: a, Proto: p})
		}
	}
	return lrps, tasks
}

// LRPAction is the BBS message for an LRP action, nil when a is not one.
func LRPAction(a plan.Action) *bbsv1.LRPAction {
	out := &bbsv1.LRPAction{Reason: a.Why()}
	switch a := a.(type) {
	case plan.CreateMissing:
		out.Action = &bbsv1.LRPAction_CreateMissing{CreateMissing: &bbsv1.CreateMissingLRPAction{
			Key:                    &modelsv1.ActualLRPKey{ProcessGuid: a.ProcessGUID, Index: a.Index, Domain: a.Domain},
			DesiredModificationTag: tagProto(a.DesiredTag),
		}}
	case plan.Unclaim:
		out.Action = &bbsv1.LRPAction_Unclaim{Unclaim: RowCondition(a.Row)}
	case plan.MarkSuspect:
		out.Action = &bbsv1.LRPAction_MarkSuspect{MarkSuspect: RowCondition(a.Row)}
	case plan.UnclaimReplacement:
		out.Action = &bbsv1.LRPAction_UnclaimReplacement{UnclaimReplacement: RowCondition(a.Row)}
	case plan.RemoveSuspect:
		out.Action = &bbsv1.LRPAction_Remove{Remove: RowCondition(a.Row)}
	case plan.RemoveEvacuating:
		out.Action = &bbsv1.LRPAction_Remove{Remove: RowCondition(a.Row)}
	case plan.PromoteSuspect:
		promote := &bbsv1.PromoteSuspectLRPAction{Suspect: RowCondition(a.Row)}
		if a.Replacement != nil {
			promote.Replacement = RowCondition(*a.Replacement)
		}
		out.Action = &bbsv1.LRPAction_PromoteSuspect{PromoteSuspect: promote}
	case plan.Retire:
		out.Action = &bbsv1.LRPAction_Retire{Retire: RowCondition(a.Row)}
	default:
		return nil
	}
	return out
}

// TaskAction is the BBS message for a task action, nil when a is not one.
func TaskAction(a plan.Action) *bbsv1.TaskAction {
	out := &bbsv1.TaskAction{Reason: a.Why()}
	switch a := a.(type) {
	case plan.FailTask:
		out.Action = &bbsv1.TaskAction_Fail{Fail: &bbsv1.FailTaskAction{
			Task: TaskCondition(a.TaskRow), FailureReason: a.FailureReason,
		}}
	case plan.KickTask:
		out.Action = &bbsv1.TaskAction_Kick{Kick: TaskCondition(a.TaskRow)}
	case plan.DemoteResolving:
		out.Action = &bbsv1.TaskAction_DemoteResolving{DemoteResolving: TaskCondition(a.TaskRow)}
	case plan.DeleteCompleted:
		out.Action = &bbsv1.TaskAction_DeleteCompleted{DeleteCompleted: TaskCondition(a.TaskRow)}
	case plan.RetryCallback:
		out.Action = &bbsv1.TaskAction_RetryCallback{RetryCallback: TaskCondition(a.TaskRow)}
	default:
		return nil
	}
	return out
}

// RowCondition is the condition naming row r as the plan saw it.
func RowCondition(r plan.Row) *bbsv1.LRPRowCondition {
	return &bbsv1.LRPRowCondition{
		Key:             &modelsv1.ActualLRPKey{ProcessGuid: r.ProcessGUID, Index: r.Index, Domain: r.Domain},
		Presence:        r.Presence,
		State:           r.State,
		ModificationTag: tagProto(r.Tag),
	}
}

// TaskCondition is the condition naming task t as the plan saw it.
func TaskCondition(t plan.TaskRow) *bbsv1.TaskRowCondition {
	return &bbsv1.TaskRowCondition{TaskGuid: t.TaskGUID, State: t.State, UpdatedAt: t.UpdatedAt}
}

// tagProto is the proto form of a modification tag.
func tagProto(t plan.Tag) *modelsv1.ModificationTag {
	return &modelsv1.ModificationTag{Epoch: t.Epoch, Index: t.Index}
}
