package models

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ValidateRequest validates any request message of the drover.bbs.v1 services and is
// the single place of request validation (the gRPC server calls it for every call).
// Besides the rules of each request type, every message obeys the limits of limits.go
// (every string bounded and without NUL, map keys are identifiers, nesting bounded).
// A type that is not the request of a drover.bbs.v1 method is refused, so that no RPC
// escapes validation. Failures are one InvalidRequest *Error naming every violated
// field and rule.
//
// Field paths are those of the request message, except that the DesiredLRP of a
// DesireLRPRequest and the update of an UpdateDesiredLRPRequest are validated at the
// top level ("process_guid", "instances"), as the LRP API sends them as the body.
func ValidateRequest(req any) error {
	var v violations
	if !v.request(req) {
		return NewError(ErrTypeInvalidRequest, "unknown request type %s: it has no validation rules", requestTypeName(req))
	}
	if root := boundsRoot(req); root != nil {
		v.stringBounds("", root.ProtoReflect(), 0)
	}
	return v.err()
}

// request applies the rules of each request type; it reports false for a type it does
// not know.
func (v *violations) request(req any) bool {
	switch r := req.(type) {
	case *bbsv1.DesireLRPRequest:
		v.desiredLRP("", r.GetDesiredLrp())
	case *bbsv1.UpdateDesiredLRPRequest:
		v.guid("process_guid", r.GetProcessGuid())
		v.desiredLRPUpdate("", r.GetUpdate())
	case *bbsv1.RemoveDesiredLRPRequest:
		v.requiredIdentifier("process_guid", r.GetProcessGuid())
	case *bbsv1.GetDesiredLRPRequest:
		v.requiredIdentifier("process_guid", r.GetProcessGuid())
	case *bbsv1.GetDesiredLRPSchedulingInfoRequest:
		v.requiredIdentifier("process_guid", r.GetProcessGuid())
	case *bbsv1.ListDesiredLRPsRequest:
		v.identifier("domain", r.GetDomain())
		v.filterIdentifiers("process_guids", r.GetProcessGuids())
	case *bbsv1.ListDesiredLRPSchedulingInfosRequest:
		v.identifier("domain", r.GetDomain())
		v.filterIdentifiers("process_guids", r.GetProcessGuids())
	case *bbsv1.ListDesiredLRPRoutingInfosRequest:
		v.filterIdentifiers("process_guids", r.GetProcessGuids())
	case *bbsv1.ListDomainsRequest, *bbsv1.ListCellsRequest, *bbsv1.ListLocksRequest,
		*bbsv1.SnapshotRequest, *bbsv1.GetConvergerStatusRequest:
		// No fields: nothing to check but the limits.

	case *bbsv1.ListActualLRPsRequest:
		v.identifier("domain", r.GetDomain())
		v.identifier("cell_id", r.GetCellId())
		v.identifier("process_guid", r.GetProcessGuid())
		if r != nil && r.Index != nil {
			v.nonNegative("index", int64(r.GetIndex()))
		}
	case *bbsv1.ClaimActualLRPRequest:
		v.requiredIdentifier("process_guid", r.GetProcessGuid())
		v.nonNegative("index", int64(r.GetIndex()))
		v.actualLRPInstanceKey("actual_lrp_instance_key", r.GetActualLrpInstanceKey())
	case *bbsv1.StartActualLRPRequest:
		v.runningInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey(), r.GetActualLrpNetInfo())
		v.instanceDetails(r.GetInternalRoutes(), r.GetMetricTags(), r.GetAvailabilityZone())
	case *bbsv1.EvacuateRunningActualLRPRequest:
		v.runningInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey(), r.GetActualLrpNetInfo())
		v.instanceDetails(r.GetInternalRoutes(), r.GetMetricTags(), r.GetAvailabilityZone())
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
	case *bbsv1.RecordExecRequest:
		v.placedInstance(r.GetActualLrpKey(), r.GetActualLrpInstanceKey())
		v.maxLength("user", r.GetUser(), MaxIdentifierLength)
		if len(r.GetArgs()) == 0 {
			v.add("args", ruleRequired)
		}
		v.atMost("args", len(r.GetArgs()), MaxExecArgs)
	case *bbsv1.FailActualLRPRequest:
		v.actualLRPKey("actual_lrp_key", r.GetActualLrpKey(), true)
		v.required("error_message", r.GetErrorMessage())
	case *bbsv1.RemoveActualLRPRequest:
		v.requiredIdentifier("process_guid", r.GetProcessGuid())
		v.nonNegative("index", int64(r.GetIndex()))
		if r.GetActualLrpInstanceKey() != nil {
			v.actualLRPInstanceKey("actual_lrp_instance_key", r.GetActualLrpInstanceKey())
		}
	case *bbsv1.RetireActualLRPRequest:
		v.actualLRPKey("actual_lrp_key", r.GetActualLrpKey(), false)

	case *bbsv1.DesireTaskRequest:
		v.guid("task_guid", r.GetTaskGuid())
		v.requiredIdentifier("domain", r.GetDomain())
		v.taskDefinition("task_definition", r.GetTaskDefinition())
	case *bbsv1.ListTasksRequest:
		v.identifier("domain", r.GetDomain())
		v.identifier("cell_id", r.GetCellId())
	case *bbsv1.StartTaskRequest:
		v.requiredIdentifier("task_guid", r.GetTaskGuid())
		v.requiredIdentifier("cell_id", r.GetCellId())
	case *bbsv1.CompleteTaskRequest:
		v.requiredIdentifier("task_guid", r.GetTaskGuid())
		v.requiredIdentifier("cell_id", r.GetCellId())
		v.maxLength("result", r.GetResult(), MaxTaskResultLength)
	case *bbsv1.GetTaskRequest:
		v.requiredIdentifier("task_guid", r.GetTaskGuid())
	case *bbsv1.CancelTaskRequest:
		v.requiredIdentifier("task_guid", r.GetTaskGuid())
	case *bbsv1.FailTaskRequest:
		v.requiredIdentifier("task_guid", r.GetTaskGuid())
	case *bbsv1.RejectTaskRequest:
		v.requiredIdentifier("task_guid", r.GetTaskGuid())
	case *bbsv1.ResolvingTaskRequest:
		v.requiredIdentifier("task_guid", r.GetTaskGuid())
	case *bbsv1.DeleteTaskRequest:
		v.requiredIdentifier("task_guid", r.GetTaskGuid())

	case *bbsv1.UpsertDomainRequest:
		v.requiredIdentifier("domain", r.GetDomain())
	case *bbsv1.HeartbeatCellRequest:
		v.cellPresence("cell_presence", r.GetCellPresence())
		if r.GetTtlSeconds() == 0 {
			v.add("ttl_seconds", rulePositive)
		}
	case *bbsv1.RemoveCellRequest:
		v.requiredIdentifier("cell_id", r.GetCellId())
	case *bbsv1.CordonCellRequest:
		v.requiredIdentifier("cell_id", r.GetCellId())
		v.maxLength("reason", r.GetReason(), MaxReasonLength)
	case *bbsv1.UncordonCellRequest:
		v.requiredIdentifier("cell_id", r.GetCellId())
	case *bbsv1.AcquireLockRequest:
		v.requiredIdentifier("key", r.GetKey())
		v.requiredIdentifier("owner", r.GetOwner())
		if r.GetTtlSeconds() == 0 {
			v.add("ttl_seconds", rulePositive)
		}
	case *bbsv1.ReleaseLockRequest:
		v.requiredIdentifier("key", r.GetKey())
		v.requiredIdentifier("owner", r.GetOwner())
	case *bbsv1.FetchLockRequest:
		v.requiredIdentifier("key", r.GetKey())

	case *bbsv1.SubscribeRequest:
		v.identifier("cell_id", r.GetCellId())

	case *bbsv1.ApplyLRPActionsRequest, *bbsv1.ApplyTaskActionsRequest:
		// Each action is checked where it is applied: the store refuses a malformed
		// action alone (its result says why) and applies the others.
	case *bbsv1.SetConvergerPausedRequest:
		v.maxLength("reason", r.GetReason(), MaxReasonLength)
	case *bbsv1.ReportConvergencePassRequest:
		if r.GetPass() == nil {
			v.add("pass", ruleRequired)
		}
	case *bbsv1.RequestAuctionsRequest:
		for i, l := range r.GetLrps() {
			v.requiredIdentifier(field(item("lrps", i), "process_guid"), l.GetProcessGuid())
			for j, index := range l.GetIndices() {
				v.nonNegative(item(field(item("lrps", i), "indices"), j), int64(index))
			}
		}
		for i, guid := range r.GetTaskGuids() {
			v.requiredIdentifier(item("task_guids", i), guid)
		}
	default:
		return false
	}
	return true
}

// requestTypeName names a request's type for the refusal of an unknown one: its
// protobuf full name, else its Go type.
func requestTypeName(req any) string {
	if m, ok := req.(proto.Message); ok {
		return string(m.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("%T", req)
}

// filterIdentifiers checks a list of identifiers a read filters by.
func (v *violations) filterIdentifiers(path string, names []string) {
	for i, name := range names {
		v.identifier(item(path, i), name)
	}
}

// instanceDetails checks what a cell reports about a RUNNING instance besides its keys:
// internal routes (host names), resolved metric tags and the availability zone.
func (v *violations) instanceDetails(internalRoutes []string, metricTags map[string]string, zone string) {
	for i, route := range internalRoutes {
		v.identifier(item("internal_routes", i), route)
	}
	v.atMost("metric_tags", len(metricTags), MaxMetricTags)
	for _, name := range sortedKeys(metricTags) {
		v.identifier(entry("metric_tags", name), metricTags[name])
	}
	v.identifier("availability_zone", zone)
}

// boundsRoot is the message whose fields the string bounds check at the top level:
// the DesiredLRP of a DesireLRPRequest and the update of an UpdateDesiredLRPRequest
// (whose process_guid has its own rule), else the request; nil when there is none.
func boundsRoot(req any) proto.Message {
	var m proto.Message
	switch r := req.(type) {
	case *bbsv1.DesireLRPRequest:
		m = r.GetDesiredLrp()
	case *bbsv1.UpdateDesiredLRPRequest:
		m = r.GetUpdate()
	case proto.Message:
		m = r
	}
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	return m
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
		v.requiredIdentifier("actual_lrp_net_info.address", net.GetAddress())
		v.identifier("actual_lrp_net_info.instance_address", net.GetInstanceAddress())
	}
}
