package models

import (
	"fmt"
	"strings"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// transitionRule says when one ActualLRP state may move to another.
type transitionRule int

const (
	never          transitionRule = iota // the transition is refused
	always                               // any instance key
	withSameKey                          // the request's instance key equals the row's
	withoutKeyOnly                       // the request carries no instance key
)

// Shorter names for the four states, for the table below.
const (
	unclaimed = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED
	claimed   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	running   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	crashed   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED
)

// actualLRPTransitions is the table of reference/bbs.md §2.2 (Diego's
// AllowsTransitionTo): from → to → rule.
var actualLRPTransitions = map[modelsv1.ActualLRPState]map[modelsv1.ActualLRPState]transitionRule{
	unclaimed: {unclaimed: always, claimed: always, running: always, crashed: never},
	claimed:   {unclaimed: withoutKeyOnly, claimed: withSameKey, running: always, crashed: withSameKey},
	running:   {unclaimed: withoutKeyOnly, claimed: withSameKey, running: withSameKey, crashed: withSameKey},
	crashed:   {unclaimed: withoutKeyOnly, claimed: withSameKey, running: withSameKey, crashed: never},
}

// ActualLRPTransition checks that the ActualLRP row before may move to state to at
// the request of instance key ik (nil or empty for requests without one, such as
// unclaim). It returns nil or an InvalidStateTransition *Error saying from, to and
// why.
func ActualLRPTransition(before *modelsv1.ActualLRP, to modelsv1.ActualLRPState, ik *modelsv1.ActualLRPInstanceKey) error {
	if before == nil {
		return NewError(ErrTypeInvalidStateTransition, "cannot transition a missing actual lrp to %s", StateName(to))
	}
	from := before.GetState()
	rule := actualLRPTransitions[from][to]
	switch rule {
	case always:
		return nil
	case withSameKey:
		if sameInstanceKey(before, ik) {
			return nil
		}
		return transitionError(from, to, fmt.Sprintf("instance key %s does not match the actual lrp's %s",
			describeKey(ik.GetInstanceGuid(), ik.GetCellId()), describeKey(before.GetInstanceGuid(), before.GetCellId())))
	case withoutKeyOnly:
		if instanceKeyEmpty(ik) {
			return nil
		}
		return transitionError(from, to, "only allowed without an instance key")
	default:
		if actualLRPTransitions[from] == nil || actualLRPTransitions[to] == nil {
			return transitionError(from, to, "unknown state")
		}
		return transitionError(from, to, "never allowed")
	}
}

func transitionError(from, to modelsv1.ActualLRPState, why string) error {
	return NewError(ErrTypeInvalidStateTransition, "cannot transition actual lrp from %s to %s: %s", StateName(from), StateName(to), why)
}

// sameInstanceKey reports whether ik names the instance of row a (two empty keys
// are the same, as in Diego).
func sameInstanceKey(a *modelsv1.ActualLRP, ik *modelsv1.ActualLRPInstanceKey) bool {
	return a.GetInstanceGuid() == ik.GetInstanceGuid() && a.GetCellId() == ik.GetCellId()
}

// instanceKeyEmpty reports whether ik is nil or has neither guid nor cell.
func instanceKeyEmpty(ik *modelsv1.ActualLRPInstanceKey) bool {
	return ik.GetInstanceGuid() == "" && ik.GetCellId() == ""
}

func describeKey(instanceGUID, cellID string) string {
	if instanceGUID == "" && cellID == "" {
		return "(none)"
	}
	return fmt.Sprintf("(instance_guid=%q cell_id=%q)", instanceGUID, cellID)
}

// ValidateActualLRP checks an ActualLRP row against the per-state rules of
// reference/bbs.md §2.2: a valid key and non-zero since; UNCLAIMED has no instance
// key, no net info and is ORDINARY; CLAIMED has an instance key, no net info and no
// placement error; RUNNING has an instance key, a net info address and no placement
// error; CRASHED has no instance key, no net info and no placement error. Presence
// UNSPECIFIED counts as ORDINARY. It returns nil or an InvalidRequest *Error.
func ValidateActualLRP(a *modelsv1.ActualLRP) error {
	var v violations
	if a == nil {
		v.add("actual_lrp", ruleRequired)
		return v.err()
	}
	v.actualLRPKey("", &modelsv1.ActualLRPKey{
		ProcessGuid: a.GetProcessGuid(), Index: a.GetIndex(), Domain: a.GetDomain(),
	}, true)
	if a.GetSince() == 0 {
		v.add("since", ruleRequired)
	}
	state := StateName(a.GetState())
	requireKey := func() {
		v.required("instance_guid", a.GetInstanceGuid())
		v.required("cell_id", a.GetCellId())
	}
	forbid := func(path string, set bool) {
		if set {
			v.add(path, "must not be set when state is "+state)
		}
	}
	forbidKey := func() {
		forbid("instance_guid", a.GetInstanceGuid() != "")
		forbid("cell_id", a.GetCellId() != "")
	}
	switch a.GetState() {
	case unclaimed:
		forbidKey()
		forbid("net_info", !netInfoEmpty(a.GetNetInfo()))
		if p := a.GetPresence(); p != modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY &&
			p != modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED {
			v.add("presence", "must be ORDINARY when state is UNCLAIMED")
		}
	case claimed:
		requireKey()
		forbid("net_info", !netInfoEmpty(a.GetNetInfo()))
		forbid("placement_error", strings.TrimSpace(a.GetPlacementError()) != "")
	case running:
		requireKey()
		v.required("net_info.address", a.GetNetInfo().GetAddress())
		forbid("placement_error", strings.TrimSpace(a.GetPlacementError()) != "")
	case crashed:
		forbidKey()
		forbid("net_info", !netInfoEmpty(a.GetNetInfo()))
		forbid("placement_error", strings.TrimSpace(a.GetPlacementError()) != "")
	default:
		v.add("state", "must be UNCLAIMED, CLAIMED, RUNNING or CRASHED")
	}
	return v.err()
}

// netInfoEmpty reports whether n carries no address, ports or preference.
func netInfoEmpty(n *modelsv1.ActualLRPNetInfo) bool {
	return n.GetAddress() == "" && n.GetInstanceAddress() == "" && len(n.GetPorts()) == 0 &&
		n.GetPreferredAddress() == modelsv1.PreferredAddress_PREFERRED_ADDRESS_UNSPECIFIED
}
