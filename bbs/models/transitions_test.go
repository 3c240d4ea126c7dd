package models_test

import (
	"fmt"
	"strings"
	"testing"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

const (
	unclaimed = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED
	claimed   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	running   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	crashed   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED
)

// TestActualLRPTransitionTable checks every cell of the table of reference/bbs.md
// §2.2. Each cell lists whether the transition is allowed with the row's own
// instance key, a different key, and no key ("y" or "n", in that order). Rows carry
// an instance key in every state so that "same" and "none" differ.
func TestActualLRPTransitionTable(t *testing.T) {
	table := map[modelsv1.ActualLRPState]map[modelsv1.ActualLRPState]string{
		unclaimed: {unclaimed: "yyy", claimed: "yyy", running: "yyy", crashed: "nnn"},
		claimed:   {unclaimed: "nny", claimed: "ynn", running: "yyy", crashed: "ynn"},
		running:   {unclaimed: "nny", claimed: "ynn", running: "ynn", crashed: "ynn"},
		crashed:   {unclaimed: "nny", claimed: "ynn", running: "ynn", crashed: "nnn"},
	}
	keys := []struct {
		name string
		key  *modelsv1.ActualLRPInstanceKey
	}{
		{"same key", &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig-1", CellId: "cell-1"}},
		{"different key", &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig-2", CellId: "cell-1"}},
		{"empty key", nil},
	}
	count := 0
	for from, row := range table {
		for to, cell := range row {
			for i, k := range keys {
				count++
				name := fmt.Sprintf("%s to %s with %s", models.StateName(from), models.StateName(to), k.name)
				t.Run(name, func(t *testing.T) {
					before := &modelsv1.ActualLRP{ProcessGuid: "pg", Domain: "d", State: from, InstanceGuid: "ig-1", CellId: "cell-1"}
					err := models.ActualLRPTransition(before, to, k.key)
					if cell[i] == 'y' {
						require.NoError(t, err)
						return
					}
					require.ErrorIs(t, err, models.ErrInvalidStateTransition)
					require.Contains(t, err.Error(), "from "+models.StateName(from)+" to "+models.StateName(to))
				})
			}
		}
	}
	require.Equal(t, 48, count)
}

func TestActualLRPTransitionDetails(t *testing.T) {
	// An empty (non-nil) instance key counts as no key.
	running := &modelsv1.ActualLRP{State: running, InstanceGuid: "ig", CellId: "c"}
	require.NoError(t, models.ActualLRPTransition(running, unclaimed, &modelsv1.ActualLRPInstanceKey{}))
	// A key that differs only in its cell is a different key.
	err := models.ActualLRPTransition(running, crashed, &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "other"})
	require.ErrorIs(t, err, models.ErrInvalidStateTransition)
	require.Contains(t, err.Error(), `instance key (instance_guid="ig" cell_id="other") does not match the actual lrp's (instance_guid="ig" cell_id="c")`)
	// A realistic CRASHED row has no instance key: a claim by some instance is refused.
	crashedRow := &modelsv1.ActualLRP{State: crashed}
	require.Error(t, models.ActualLRPTransition(crashedRow, claimed, &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "c"}))
	require.NoError(t, models.ActualLRPTransition(crashedRow, unclaimed, nil))
	// Unknown states and missing rows are refused.
	require.ErrorContains(t, models.ActualLRPTransition(&modelsv1.ActualLRP{}, claimed, nil), "unknown state")
	require.ErrorContains(t, models.ActualLRPTransition(&modelsv1.ActualLRP{State: unclaimed}, 0, nil), "from UNCLAIMED to UNSPECIFIED")
	require.ErrorIs(t, models.ActualLRPTransition(nil, claimed, nil), models.ErrInvalidStateTransition)
}

func TestValidateActualLRP(t *testing.T) {
	netInfo := &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}
	base := func(state modelsv1.ActualLRPState) *modelsv1.ActualLRP {
		a := &modelsv1.ActualLRP{ProcessGuid: "pg", Index: 1, Domain: "d", State: state, Since: 1,
			Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY}
		if state == claimed || state == running {
			a.InstanceGuid, a.CellId = "ig", "cell"
		}
		if state == running {
			a.NetInfo = netInfo
		}
		return a
	}
	for _, s := range []modelsv1.ActualLRPState{unclaimed, claimed, running, crashed} {
		require.NoError(t, models.ValidateActualLRP(base(s)), models.StateName(s))
	}
	unspecifiedPresence := base(unclaimed)
	unspecifiedPresence.Presence = 0
	require.NoError(t, models.ValidateActualLRP(unspecifiedPresence))
	placementError := base(unclaimed)
	placementError.PlacementError = "insufficient resources"
	require.NoError(t, models.ValidateActualLRP(placementError))

	cases := []struct {
		name   string
		state  modelsv1.ActualLRPState
		mutate func(*modelsv1.ActualLRP)
		want   []string
	}{
		{"key and since", unclaimed, func(a *modelsv1.ActualLRP) { a.ProcessGuid, a.Index, a.Domain, a.Since = "", -1, "", 0 }, []string{
			"invalid field process_guid: required", "invalid field index: must be >= 0", "invalid field domain: required", "invalid field since: required",
		}},
		{"unclaimed with instance and net info", unclaimed, func(a *modelsv1.ActualLRP) {
			a.InstanceGuid, a.CellId, a.NetInfo = "ig", "c", netInfo
			a.Presence = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING
		}, []string{
			"invalid field instance_guid: must not be set when state is UNCLAIMED", "invalid field cell_id: must not be set when state is UNCLAIMED",
			"invalid field net_info: must not be set when state is UNCLAIMED", "invalid field presence: must be ORDINARY when state is UNCLAIMED",
		}},
		{"claimed without key, with net info and placement error", claimed, func(a *modelsv1.ActualLRP) {
			a.InstanceGuid, a.CellId, a.PlacementError = "", "", "x"
			a.NetInfo = &modelsv1.ActualLRPNetInfo{PreferredAddress: modelsv1.PreferredAddress_PREFERRED_ADDRESS_HOST}
		}, []string{
			"invalid field instance_guid: required", "invalid field cell_id: required",
			"invalid field net_info: must not be set when state is CLAIMED", "invalid field placement_error: must not be set when state is CLAIMED",
		}},
		{"running without address", running, func(a *modelsv1.ActualLRP) { a.NetInfo, a.PlacementError = nil, "x" }, []string{
			"invalid field net_info.address: required", "invalid field placement_error: must not be set when state is RUNNING",
		}},
		{"crashed with leftovers", crashed, func(a *modelsv1.ActualLRP) {
			a.InstanceGuid, a.NetInfo, a.PlacementError = "ig", netInfo, "x"
		}, []string{
			"invalid field instance_guid: must not be set when state is CRASHED", "invalid field net_info: must not be set when state is CRASHED",
			"invalid field placement_error: must not be set when state is CRASHED",
		}},
		{"unspecified state", 0, func(*modelsv1.ActualLRP) {}, []string{"invalid field state: must be UNCLAIMED, CLAIMED, RUNNING or CRASHED"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := base(tc.state)
			tc.mutate(a)
			requireInvalid(t, models.ValidateActualLRP(a), tc.want...)
		})
	}
	requireInvalid(t, models.ValidateActualLRP(nil), "invalid field actual_lrp: required")
}

func TestTaskLifecycle(t *testing.T) {
	const (
		unspecified = modelsv1.TaskState_TASK_STATE_UNSPECIFIED
		pending     = modelsv1.TaskState_TASK_STATE_PENDING
		running     = modelsv1.TaskState_TASK_STATE_RUNNING
		completed   = modelsv1.TaskState_TASK_STATE_COMPLETED
		resolving   = modelsv1.TaskState_TASK_STATE_RESOLVING
	)
	states := []modelsv1.TaskState{unspecified, pending, running, completed, resolving}
	allowed := map[[2]modelsv1.TaskState]bool{
		{pending, running}:     true,
		{running, completed}:   true,
		{completed, resolving}: true,
	}
	for _, from := range states {
		for _, to := range states {
			t.Run(models.TaskStateName(from)+" to "+models.TaskStateName(to), func(t *testing.T) {
				err := models.TaskTransition(from, to)
				if allowed[[2]modelsv1.TaskState{from, to}] {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, models.ErrInvalidStateTransition)
				require.Contains(t, err.Error(), "from "+models.TaskStateName(from)+" to "+models.TaskStateName(to))
			})
		}
	}

	special := []struct {
		state                       modelsv1.TaskState
		cancel, reject, deleteAllow bool
	}{
		{unspecified, false, false, false},
		{pending, true, true, false},
		{running, true, true, false},
		{completed, false, false, false},
		{resolving, false, false, true},
	}
	for _, s := range special {
		t.Run("special "+models.TaskStateName(s.state), func(t *testing.T) {
			require.Equal(t, s.cancel, models.TaskCanBeCancelled(s.state))
			require.Equal(t, s.reject, models.TaskCanBeRejected(s.state))
			require.Equal(t, s.deleteAllow, models.TaskCanBeDeleted(s.state))
		})
	}
}

func TestNames(t *testing.T) {
	for s, name := range map[modelsv1.ActualLRPState]string{unclaimed: "UNCLAIMED", claimed: "CLAIMED", running: "RUNNING", crashed: "CRASHED", 0: "UNSPECIFIED", 42: "UNSPECIFIED"} {
		require.Equal(t, name, models.StateName(s))
	}
	for p, name := range map[modelsv1.ActualLRPPresence]string{1: "ORDINARY", 2: "EVACUATING", 3: "SUSPECT", 0: "UNSPECIFIED"} {
		require.Equal(t, name, models.PresenceName(p))
	}
	for s, name := range map[modelsv1.TaskState]string{1: "PENDING", 2: "RUNNING", 3: "COMPLETED", 4: "RESOLVING", 0: "UNSPECIFIED"} {
		require.Equal(t, name, models.TaskStateName(s))
	}
	for in, want := range map[string]modelsv1.ActualLRPState{"RUNNING": running, "crashed": crashed, "ACTUAL_LRP_STATE_CLAIMED": claimed, " unclaimed ": unclaimed} {
		got, ok := models.ParseActualLRPState(in)
		require.True(t, ok, in)
		require.Equal(t, want, got)
	}
	for _, in := range []string{"", "UNSPECIFIED", "ACTUAL_LRP_STATE_UNSPECIFIED", "RUN"} {
		_, ok := models.ParseActualLRPState(in)
		require.False(t, ok, in)
	}
	got, ok := models.ParseTaskState("TASK_STATE_RESOLVING")
	require.True(t, ok)
	require.Equal(t, modelsv1.TaskState_TASK_STATE_RESOLVING, got)
	got, ok = models.ParseTaskState("pending")
	require.True(t, ok)
	require.Equal(t, modelsv1.TaskState_TASK_STATE_PENDING, got)
	_, ok = models.ParseTaskState("DONE")
	require.False(t, ok)
	p, ok := models.ParsePresence("suspect")
	require.True(t, ok)
	require.Equal(t, modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT, p)
}

func TestTruncateReason(t *testing.T) {
	require.Equal(t, "short", models.TruncateReason("short"))
	exact := strings.Repeat("a", models.MaxReasonLength)
	require.Equal(t, exact, models.TruncateReason(exact))
	require.Equal(t, exact, models.TruncateReason(exact+"tail"))
	// A multi-byte character straddling the limit is dropped whole.
	straddle := strings.Repeat("a", models.MaxReasonLength-1) + "é"
	require.Equal(t, strings.Repeat("a", models.MaxReasonLength-1), models.TruncateReason(straddle))
	// Invalid UTF-8 is replaced, so the reason can be stored in a proto string.
	require.Equal(t, "bad \uFFFD byte", models.TruncateReason("bad \xff byte"))
}
