package harmonizer

import (
	"context"

	"drover.dev/bbs/client"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// BBS is the part of the BBS API the harmonizer drives. Errors are BBS errors (they
// are read with models.FromError, across gRPC or not).
type BBS interface {
	ListActualLRPs(ctx context.Context, cellID string) ([]*modelsv1.ActualLRP, error)
	ClaimActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey) error
	StartActualLRP(ctx context.Context, req *bbsv1.StartActualLRPRequest) error
	CrashActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, reason string) error
	RemoveActualLRP(ctx context.Context, processGuid string, index int32, instance *modelsv1.ActualLRPInstanceKey) error
	DesiredLRP(ctx context.Context, processGuid string) (*modelsv1.DesiredLRP, error)
	ListTasks(ctx context.Context, cellID string) ([]*modelsv1.Task, error)
	Task(ctx context.Context, taskGuid string) (*modelsv1.Task, error)
	StartTask(ctx context.Context, taskGuid, cellID string) (shouldStart bool, err error)
	CompleteTask(ctx context.Context, req *bbsv1.CompleteTaskRequest) error
	RejectTask(ctx context.Context, taskGuid, reason string) error

	// The calls of a draining cell (bbs.md §1.2); keep says whether to keep the container.
	EvacuateClaimedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey) (keep bool, err error)
	EvacuateRunningActualLRP(ctx context.Context, req *bbsv1.EvacuateRunningActualLRPRequest) (keep bool, err error)
	EvacuateStoppedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey) (keep bool, err error)
	EvacuateCrashedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, reason string) (keep bool, err error)
	RemoveEvacuatingActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey) error
}

// GRPCBBS is the BBS over its gRPC client.
type GRPCBBS struct{ Client *client.Client }

var _ BBS = GRPCBBS{}

// ListActualLRPs reads every row on the cell (all presences).
func (b GRPCBBS) ListActualLRPs(ctx context.Context, cellID string) ([]*modelsv1.ActualLRP, error) {
	return client.AllActualLRPs(ctx, b.Client, &bbsv1.ListActualLRPsRequest{CellId: cellID})
}

// ClaimActualLRP claims an index for an instance on this cell.
func (b GRPCBBS) ClaimActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey) error {
	_, err := b.Client.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{ProcessGuid: key.GetProcessGuid(), Index: key.GetIndex(), ActualLrpInstanceKey: instance})
	return err
}

// StartActualLRP reports a running instance.
func (b GRPCBBS) StartActualLRP(ctx context.Context, req *bbsv1.StartActualLRPRequest) error {
	_, err := b.Client.StartActualLRP(ctx, req)
	return err
}

// CrashActualLRP reports a crashed instance.
func (b GRPCBBS) CrashActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, reason string) error {
	_, err := b.Client.CrashActualLRP(ctx, &bbsv1.CrashActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: instance, ErrorMessage: reason})
	return err
}

// RemoveActualLRP deletes the ordinary row of an index held by instance.
func (b GRPCBBS) RemoveActualLRP(ctx context.Context, processGuid string, index int32, instance *modelsv1.ActualLRPInstanceKey) error {
	_, err := b.Client.RemoveActualLRP(ctx, &bbsv1.RemoveActualLRPRequest{ProcessGuid: processGuid, Index: index, ActualLrpInstanceKey: instance})
	return err
}

// DesiredLRP fetches a DesiredLRP.
func (b GRPCBBS) DesiredLRP(ctx context.Context, processGuid string) (*modelsv1.DesiredLRP, error) {
	resp, err := b.Client.GetDesiredLRP(ctx, &bbsv1.GetDesiredLRPRequest{ProcessGuid: processGuid})
	if err != nil {
		return nil, err
	}
	return resp.GetDesiredLrp(), nil
}

// ListTasks lists the tasks on a cell.
func (b GRPCBBS) ListTasks(ctx context.Context, cellID string) ([]*modelsv1.Task, error) {
	resp, err := b.Client.ListTasks(ctx, &bbsv1.ListTasksRequest{CellId: cellID})
	if err != nil {
		return nil, err
	}
	return resp.GetTasks(), nil
}

// Task fetches a task.
func (b GRPCBBS) Task(ctx context.Context, taskGuid string) (*modelsv1.Task, error) {
	resp, err := b.Client.GetTask(ctx, &bbsv1.GetTaskRequest{TaskGuid: taskGuid})
	if err != nil {
		return nil, err
	}
	return resp.GetTask(), nil
}

// StartTask moves a task to RUNNING on the cell; shouldStart says whether to run it.
func (b GRPCBBS) StartTask(ctx context.Context, taskGuid, cellID string) (bool, error) {
	resp, err := b.Client.StartTask(ctx, &bbsv1.StartTaskRequest{TaskGuid: taskGuid, CellId: cellID})
	if err != nil {
		return false, err
	}
	return resp.GetShouldStart(), nil
}

// CompleteTask records a task's outcome.
func (b GRPCBBS) CompleteTask(ctx context.Context, req *bbsv1.CompleteTaskRequest) error {
	_, err := b.Client.CompleteTask(ctx, req)
	return err
}

// RejectTask hands a task back for another placement.
func (b GRPCBBS) RejectTask(ctx context.Context, taskGuid, reason string) error {
	_, err := b.Client.RejectTask(ctx, &bbsv1.RejectTaskRequest{TaskGuid: taskGuid, RejectionReason: reason})
	return err
}

// EvacuateClaimedActualLRP hands an unstarted instance back for placement elsewhere.
func (b GRPCBBS) EvacuateClaimedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey) (bool, error) {
	resp, err := b.Client.EvacuateClaimedActualLRP(ctx, &bbsv1.EvacuateClaimedActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: instance})
	return resp.GetKeepContainer(), err
}

// EvacuateRunningActualLRP asks for a replacement of a running instance.
func (b GRPCBBS) EvacuateRunningActualLRP(ctx context.Context, req *bbsv1.EvacuateRunningActualLRPRequest) (bool, error) {
	resp, err := b.Client.EvacuateRunningActualLRP(ctx, req)
	return resp.GetKeepContainer(), err
}

// EvacuateStoppedActualLRP deletes the instance's row, whatever its presence.
func (b GRPCBBS) EvacuateStoppedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey) (bool, error) {
	resp, err := b.Client.EvacuateStoppedActualLRP(ctx, &bbsv1.EvacuateStoppedActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: instance})
	return resp.GetKeepContainer(), err
}

// EvacuateCrashedActualLRP reports a crash on a draining cell.
func (b GRPCBBS) EvacuateCrashedActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey, reason string) (bool, error) {
	resp, err := b.Client.EvacuateCrashedActualLRP(ctx, &bbsv1.EvacuateCrashedActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: instance, ErrorMessage: reason})
	return resp.GetKeepContainer(), err
}

// RemoveEvacuatingActualLRP deletes the instance's EVACUATING row.
func (b GRPCBBS) RemoveEvacuatingActualLRP(ctx context.Context, key *modelsv1.ActualLRPKey, instance *modelsv1.ActualLRPInstanceKey) error {
	_, err := b.Client.RemoveEvacuatingActualLRP(ctx, &bbsv1.RemoveEvacuatingActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: instance})
	return err
}

// refused reports whether the BBS turned the call down for good (the record is gone,
// in another state, or on another cell; Unauthorized when another cell holds it, as the
// BBS lets a cell act only on what it holds), as opposed to a failure worth retrying.
func refused(err error) bool {
	e := models.FromError(err)
	if e == nil {
		return false
	}
	switch e.Type {
	case models.ErrTypeInvalidStateTransition, models.ErrTypeResourceNotFound, models.ErrTypeRunningOnDifferentCell,
		models.ErrTypeUnauthorized:
		return true
	}
	return false
}

// transient reports whether err is worth retrying later (BBS unreachable or unknown
// failure): the harmonizer then keeps the container so the next sync tries again.
func transient(err error) bool {
	e := models.FromError(err)
	return e != nil && (e.Type == models.ErrTypeUnavailable || e.Type == models.ErrTypeUnknown)
}
