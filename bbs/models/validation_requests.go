package models

import (
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ValidateRequest validates any request message of the drover.bbs.v1 services and is
// the single place of request validation (the gRPC server calls it for every call).
// Messages without rules and unknown types are valid. Failures are one InvalidRequest
// *Error naming every violated field and rule.
//
// Field paths are those of the request message, except that the DesiredLRP of a
// DesireLRPRequest and the update of an UpdateDesiredLRPRequest are validated at the
// top level ("process_guid", "instances"), as the LRP API sends them as the body.
func ValidateRequest(req any) error {
	var v violations
	switch r := req.(type) {
	case *bbsv1.DesireLRPRequest:
		v.desiredLRP("", r.GetDesiredLrp())
	case *bbsv1.UpdateDesiredLRPRequest:
		v.guid("process_guid", r.GetProcessGuid())
		v.desiredLRPUpdate("", r.GetUpdate())
	case *bbsv1.RemoveDesiredLRPRequest:
		v.required("process_guid", r.GetProcessGuid())
	case *bbsv1.GetDesiredLRPRequest:
		v.required("process_guid", r.GetProcessGuid())
	case *bbsv1.GetDesiredLRPSchedulingInfoRequest:
		v.required("process_guid", r.GetProcessGuid())

	case *bbsv1.ListActualLRPsRequest:
		if r != nil && r.Index != nil {
			v.nonNegative("index", int64(r.GetIndex()))
		}
	case *bbsv1.ClaimActualLRPRequest:
		v.required("process_guid", r.GetProcessGuid())
		v.nonNegative("index", int64(r.GetIndex()))
		v.actualLRPInstanceKey("actual_lrp_instance_key", r.GetActualLrpInstanceKey())
	case *bbsv1.StartActualLRPRequest:
		v.runningInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey(), r.GetActualLrpNetInfo())
	case *bbsv1.EvacuateRunningActualLRPRequest:
		v.runningInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey(), r.GetActualLrpNetInfo())
	case *bbsv1.CrashActualLRPRequest:
		v.placedInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey())
	case *bbsv1.EvacuateClaimedActualLRPRequest:
		v.placedInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey())
	case *bbsv1.EvacuateStoppedActualLRPRequest:
		v.placedInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey())
	case *bbsv1.EvacuateCrashedActualLRPRequest:
		v.placedInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey())
	case *bbsv1.RemoveEvacuatingActualLRPRequest:
		v.placedInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey())
	case *bbsv1.FailActualLRPRequest:
		v.actualLRPKey("actual_lrp_key", r.GetActualLrpKey(), true)
		v.required("error_message", r.GetErrorMessage())
	case *bbsv1.RemoveActualLRPRequest:
		v.required("process_guid", r.GetProcessGuid())
		v.nonNegative("index", int64(r.GetIndex()))
		if r.GetActualLrpInstanceKey() != nil {
			v.actualLRPInstanceKey("actual_lrp_instance_key", r.GetActualLrpInstanceKey())
		}
	case *bbsv1.RetireActualLRPRequest:
		v.actualLRPKey("actual_lrp_key", r.GetActualLrpKey(), false)

	case *bbsv1.DesireTaskRequest:
		v.guid("task_guid", r.GetTaskGuid())
		v.required("domain", r.GetDomain())
		v.taskDefinition("task_definition", r.GetTaskDefinition())
	case *bbsv1.StartTaskRequest:
		v.required("task_guid", r.GetTaskGuid())
		v.required("cell_id", r.GetCellId())
	case *bbsv1.CompleteTaskRequest:
		v.required("task_guid", r.GetTaskGuid())
		v.required("cell_id", r.GetCellId())
	case *bbsv1.GetTaskRequest:
		v.required("task_guid", r.GetTaskGuid())
	case *bbsv1.CancelTaskRequest:
		v.required("task_guid", r.GetTaskGuid())
	case *bbsv1.FailTaskRequest:
		v.required("task_guid", r.GetTaskGuid())
	case *bbsv1.RejectTaskRequest:
		v.required("task_guid", r.GetTaskGuid())
	case *bbsv1.ResolvingTaskRequest:
		v.required("task_guid", r.GetTaskGuid())
	case *bbsv1.DeleteTaskRequest:
		v.required("task_guid", r.GetTaskGuid())

	case *bbsv1.UpsertDomainRequest:
		v.required("domain", r.GetDomain())
	case *bbsv1.HeartbeatCellRequest:
		v.cellPresence("cell_presence", r.GetCellPresence())
		if r.GetTtlSeconds() == 0 {
			v.add("ttl_seconds", rulePositive)
		}
	case *bbsv1.RemoveCellRequest:
		v.required("cell_id", r.GetCellId())
	case *bbsv1.CordonCellRequest:
		v.required("cell_id", r.GetCellId())
	case *bbsv1.UncordonCellRequest:
		v.required("cell_id", r.GetCellId())
	case *bbsv1.AcquireLockRequest:
		v.required("key", r.GetKey())
		v.required("owner", r.GetOwner())
		if r.GetTtlSeconds() == 0 {
			v.add("ttl_seconds", rulePositive)
		}
	case *bbsv1.ReleaseLockRequest:
		v.required("key", r.GetKey())
		v.required("owner", r.GetOwner())
	case *bbsv1.FetchLockRequest:
		v.required("key", r.GetKey())

	case *bbsv1.ReportConvergencePassRequest:
		if r.GetPass() == nil {
			v.add("pass", ruleRequired)
		}
	case *bbsv1.RequestAuctionsRequest:
		for i, l := range r.GetLrps() {
			v.required(field(item("lrps", i), "process_guid"), l.GetProcessGuid())
			for j, index := range l.GetIndices() {
				v.nonNegative(item(field(item("lrps", i), "indices"), j), int64(index))
			}
		}
		for i, guid := range r.GetTaskGuids() {
			v.required(item("task_guids", i), guid)
		}
	}
	return v.err()
}

// placedInstance checks the keys of a report about a placed instance (crash and the
// evacuation calls).
func (v *violations) placedInstance(key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey) {
	v.actualLRPKey("actual_lrp_key", key, true)
	v.actualLRPInstanceKey("actual_lrp_instance_key", ik)
}

// runningInstance checks a report of a RUNNING instance (start, evacuate running): its
// keys and net info with an address.
func (v *violations) runningInstance(key *modelsv1.ActualLRPKey, ik *modelsv1.ActualLRPInstanceKey, net *modelsv1.ActualLRPNetInfo) {
	v.placedInstance(key, ik)
	if net == nil {
		v.add("actual_lrp_net_info", ruleRequired)
	} else {
		v.required("actual_lrp_net_info.address", net.GetAddress())
	}
}
