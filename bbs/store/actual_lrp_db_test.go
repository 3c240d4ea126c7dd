package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

const (
	unclaimed = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED
	claimed   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	running   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	crashed   = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED
	ordinary  = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY
	suspect   = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT
)

func lrpKey(guid string, index int32) *modelsv1.ActualLRPKey {
	return &modelsv1.ActualLRPKey{ProcessGuid: guid, Index: index, Domain: "cf-apps"}
}

func TestClaimActualLRP(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	created := desire(t, s, newDesiredLRP("app", 1)).Created[0]
	ik := instanceKey("i-1", "cell-a")

	clock.Advance(time.Second)
	seq := latest(t, s)
	change, err := s.ClaimActualLRP(ctx, "app", 0, ik)
	require.NoError(t, err)
	requireProtoEqual(t, created, change.Before)
	after := change.After
	require.Equal(t, claimed, after.State)
	require.Equal(t, "i-1", after.InstanceGuid)
	require.Equal(t, "cell-a", after.CellId)
	require.Equal(t, clock.Now().UnixNano(), after.Since)
	require.Equal(t, created.ModificationTag.Epoch, after.ModificationTag.Epoch)
	require.Equal(t, uint32(1), after.ModificationTag.Index)
	require.NoError(t, models.ValidateActualLRP(after))
	require.Equal(t, []string{models.EventTypeActualLRPInstanceChanged}, eventTypes(t, s, seq))
	stored, err := s.GetActualLRP(ctx, "app", 0, ordinary)
	require.NoError(t, err)
	requireProtoEqual(t, after, stored)

	t.Run("re-claim with the same key is a no-op", func(t *testing.T) {
		seq := latest(t, s)
		again, err := s.ClaimActualLRP(ctx, "app", 0, ik)
		require.NoError(t, err)
		requireProtoEqual(t, after, again.After)
		require.Empty(t, eventTypes(t, s, seq))
	})
	t.Run("another instance cannot claim", func(t *testing.T) {
		_, err := s.ClaimActualLRP(ctx, "app", 0, instanceKey("i-2", "cell-b"))
		requireErrorType(t, err, models.ErrTypeInvalidStateTransition)
	})
	t.Run("missing row and nil key", func(t *testing.T) {
		_, err := s.ClaimActualLRP(ctx, "app", 7, ik)
		requireErrorType(t, err, models.ErrTypeResourceNotFound)
		_, err = s.ClaimActualLRP(ctx, "app", 0, nil)
		requireErrorType(t, err, models.ErrTypeInvalidRequest)
	})
	t.Run("claim clears a placement error", func(t *testing.T) {
		desire(t, s, newDesiredLRP("failed", 1))
		_, err := s.FailActualLRP(ctx, lrpKey("failed", 0), "no cell had room")
		require.NoError(t, err)
		change, err := s.ClaimActualLRP(ctx, "failed", 0, ik)
		require.NoError(t, err)
		require.Equal(t, "no cell had room", change.Before.PlacementError)
		require.Empty(t, change.After.PlacementError)
	})
}

func TestStartActualLRP(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 2))
	ik := instanceKey("i-1", "cell-a")
	_, err := s.ClaimActualLRP(ctx, "app", 0, ik)
	require.NoError(t, err)
	opts := store.StartOptions{
		InternalRoutes:   []string{"app.apps.internal"},
		MetricTags:       map[string]string{"index": "0"},
		Routable:         true,
		AvailabilityZone: "z1",
	}

	clock.Advance(time.Second)
	seq := latest(t, s)
	change, err := s.StartActualLRP(ctx, lrpKey("app", 0), ik, netInfo("1.2.3.4"), opts)
	require.NoError(t, err)
	after := change.After
	require.Equal(t, running, after.State)
	require.Equal(t, "1.2.3.4", after.NetInfo.Address)
	require.Equal(t, []string{"app.apps.internal"}, after.InternalRoutes)
	require.Equal(t, map[string]string{"index": "0"}, after.MetricTags)
	require.True(t, after.Routable)
	require.Equal(t, "z1", after.AvailabilityZone)
	require.Equal(t, clock.Now().UnixNano(), after.Since)
	require.Equal(t, uint32(2), after.ModificationTag.Index)
	require.NoError(t, models.ValidateActualLRP(after))
	require.Equal(t, []string{models.EventTypeActualLRPInstanceChanged}, eventTypes(t, s, seq))
	stored, err := s.GetActualLRP(ctx, "app", 0, ordinary)
	require.NoError(t, err)
	requireProtoEqual(t, after, stored)

	t.Run("an unchanged start is a no-op without events", func(t *testing.T) {
		seq := latest(t, s)
		clock.Advance(time.Second)
		again, err := s.StartActualLRP(ctx, lrpKey("app", 0), ik, netInfo("1.2.3.4"), opts)
		require.NoError(t, err)
		requireProtoEqual(t, after, again.After)
		require.Empty(t, eventTypes(t, s, seq))
	})
	t.Run("a changed start while running keeps since", func(t *testing.T) {
		clock.Advance(time.Second)
		notRoutable := opts
		notRoutable.Routable = false
		changed, err := s.StartActualLRP(ctx, lrpKey("app", 0), ik, netInfo("1.2.3.4"), notRoutable)
		require.NoError(t, err)
		require.False(t, changed.After.Routable)
		require.Equal(t, after.Since, changed.After.Since)
		require.Equal(t, after.ModificationTag.Index+1, changed.After.ModificationTag.Index)
	})
	t.Run("another instance cannot start a running index", func(t *testing.T) {
		_, err := s.StartActualLRP(ctx, lrpKey("app", 0), instanceKey("i-9", "cell-z"), netInfo("5.6.7.8"), opts)
		requireErrorType(t, err, models.ErrTypeInvalidStateTransition)
	})
	t.Run("an unclaimed row can start directly", func(t *testing.T) {
		change, err := s.StartActualLRP(ctx, lrpKey("app", 1), instanceKey("i-b", "cell-b"), netInfo("1.1.1.1"), opts)
		require.NoError(t, err)
		require.Equal(t, unclaimed, change.Before.State)
		require.Equal(t, running, change.After.State)
	})
	t.Run("a missing row is created running", func(t *testing.T) {
		seq := latest(t, s)
		change, err := s.StartActualLRP(ctx, lrpKey("ghost", 4), instanceKey("i-g", "cell-g"), netInfo("2.2.2.2"), opts)
		require.NoError(t, err)
		require.Nil(t, change.Before)
		require.Equal(t, running, change.After.State)
		require.NotEmpty(t, change.After.ModificationTag.Epoch)
		require.Equal(t, ordinary, change.After.Presence)
		require.Equal(t, []string{models.EventTypeActualLRPInstanceCreated}, eventTypes(t, s, seq))
	})
	t.Run("nil arguments", func(t *testing.T) {
		_, err := s.StartActualLRP(ctx, nil, ik, netInfo("1.2.3.4"), opts)
		requireErrorType(t, err, models.ErrTypeInvalidRequest)
		_, err = s.StartActualLRP(ctx, lrpKey("app", 0), nil, netInfo("1.2.3.4"), opts)
		requireErrorType(t, err, models.ErrTypeInvalidRequest)
		_, err = s.StartActualLRP(ctx, lrpKey("app", 0), ik, nil, opts)
		requireErrorType(t, err, models.ErrTypeInvalidRequest)
	})
}

func TestCrashOfAnIndexNoLongerDesiredDeletesIt(t *testing.T) {
	t.Parallel()
	s, _ := newStoreWithClock(t)
	ctx := testContext(t)
	one := int32(1)
	for name, undesire := range map[string]func(guid string){
		"desired LRP removed": func(guid string) {
			_, err := s.RemoveDesiredLRP(ctx, guid)
			require.NoError(t, err)
		},
		"scaled below the index": func(guid string) {
			_, err := s.UpdateDesiredLRP(ctx, guid, &modelsv1.DesiredLRPUpdate{Instances: &one})
			require.NoError(t, err)
		},
	} {
		t.Run(name, func(t *testing.T) {
			guid := strings.ReplaceAll(name, " ", "-")
			desire(t, s, newDesiredLRP(guid, 2))
			key, ik := lrpKey(guid, 1), instanceKey("i-1", "cell-a")
			_, err := s.StartActualLRP(ctx, key, ik, netInfo("1.2.3.4"), store.StartOptions{Routable: true})
			require.NoError(t, err)
			undesire(guid) // the placed row stays until its rep stops it...
			seq := latest(t, s)

			result, err := s.CrashActualLRP(ctx, key, ik, "exit status 2") // ...but it crashed first
			require.NoError(t, err)
			require.False(t, result.Restart, "nothing to restart")
			require.Nil(t, result.After)
			rows, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{ProcessGuid: guid})
			require.NoError(t, err)
			for _, a := range rows {
				require.NotEqual(t, int32(1), a.GetIndex(), "index 1 is gone: %v", a)
			}
			require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))
		})
	}
}

func TestCrashActualLRPRestartPolicy(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 1))
	key := lrpKey("app", 0)

	// Diego's counting: crash counts 1 and 2 restart at once, the 3rd stays CRASHED.
	tests := []struct {
		wantCount   int32
		wantRestart bool
		wantState   modelsv1.ActualLRPState
	}{
		{1, true, unclaimed},
		{2, true, unclaimed},
		{3, false, crashed},
	}
	for i, tt := range tests {
		ik := instanceKey("i-"+string(rune('a'+i)), "cell-a")
		_, err := s.StartActualLRP(ctx, key, ik, netInfo("1.2.3.4"), store.StartOptions{Routable: true})
		require.NoError(t, err, "crash %d", i+1)
		clock.Advance(10 * time.Second)
		seq := latest(t, s)
		result, err := s.CrashActualLRP(ctx, key, ik, "exit status 1")
		require.NoError(t, err, "crash %d", i+1)
		require.Equal(t, tt.wantRestart, result.Restart, "crash %d", i+1)
		after := result.After
		require.Equal(t, tt.wantState, after.State, "crash %d", i+1)
		require.Equal(t, tt.wantCount, after.CrashCount, "crash %d", i+1)
		require.Equal(t, "exit status 1", after.CrashReason)
		require.Empty(t, after.InstanceGuid)
		require.Empty(t, after.CellId)
		require.Nil(t, after.NetInfo)
		require.False(t, after.Routable)
		require.Equal(t, clock.Now().UnixNano(), after.Since)
		require.NoError(t, models.ValidateActualLRP(after))

		types := eventTypes(t, s, seq)
		require.Equal(t, models.EventTypeActualLRPCrashed, types[0], "crash %d", i+1)
		require.ElementsMatch(t, []string{models.EventTypeActualLRPCrashed,
			models.EventTypeActualLRPInstanceRemoved, models.EventTypeActualLRPInstanceCreated}, types)
		events, err := s.EventsAfter(ctx, seq, 1)
		require.NoError(t, err)
		crash := events[0].GetActualLrpCrashed()
		require.Equal(t, ik.InstanceGuid, crash.ActualLrpInstanceKey.InstanceGuid)
		require.Equal(t, tt.wantCount, crash.CrashCount)
	}

	t.Run("a crashed row cannot crash again", func(t *testing.T) {
		_, err := s.CrashActualLRP(ctx, key, instanceKey("i-c", "cell-a"), "again")
		requireErrorType(t, err, models.ErrTypeInvalidStateTransition)
	})
	t.Run("crash count resets after five minutes running", func(t *testing.T) {
		desire(t, s, newDesiredLRP("steady", 1))
		k := lrpKey("steady", 0)
		ik := instanceKey("i-s", "cell-a")
		for range 2 {
			_, err := s.StartActualLRP(ctx, k, ik, netInfo("1.2.3.4"), store.StartOptions{})
			require.NoError(t, err)
			_, err = s.CrashActualLRP(ctx, k, ik, "boom")
			require.NoError(t, err)
		}
		// Restarted with crash count 2, it now runs for 6 minutes before crashing:
		// without the reset this would be crash 3, which is not restarted at once.
		started, err := s.StartActualLRP(ctx, k, ik, netInfo("1.2.3.4"), store.StartOptions{})
		require.NoError(t, err)
		require.Equal(t, int32(2), started.After.CrashCount)
		clock.Advance(6 * time.Minute)
		result, err := s.CrashActualLRP(ctx, k, ik, "late crash")
		require.NoError(t, err)
		require.Equal(t, int32(1), result.After.CrashCount)
		require.True(t, result.Restart)
	})
	t.Run("reason is truncated", func(t *testing.T) {
		desire(t, s, newDesiredLRP("verbose", 1))
		ik := instanceKey("i-v", "cell-a")
		_, err := s.ClaimActualLRP(ctx, "verbose", 0, ik)
		require.NoError(t, err)
		result, err := s.CrashActualLRP(ctx, lrpKey("verbose", 0), ik, strings.Repeat("x", 5000))
		require.NoError(t, err)
		require.Len(t, result.After.CrashReason, models.MaxReasonLength)
	})
	t.Run("wrong instance and nil keys", func(t *testing.T) {
		desire(t, s, newDesiredLRP("other", 1))
		_, err := s.ClaimActualLRP(ctx, "other", 0, instanceKey("i-o", "cell-a"))
		require.NoError(t, err)
		_, err = s.CrashActualLRP(ctx, lrpKey("other", 0), instanceKey("i-x", "cell-a"), "no")
		requireErrorType(t, err, models.ErrTypeInvalidStateTransition)
		_, err = s.CrashActualLRP(ctx, nil, nil, "no")
		requireErrorType(t, err, models.ErrTypeInvalidRequest)
	})
}

func TestFailActualLRP(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 2))

	clock.Advance(time.Minute)
	seq := latest(t, s)
	change, err := s.FailActualLRP(ctx, lrpKey("app", 0), strings.Repeat("insufficient resources ", 100))
	require.NoError(t, err)
	require.Equal(t, unclaimed, change.After.State)
	require.Len(t, change.After.PlacementError, models.MaxReasonLength)
	require.True(t, strings.HasPrefix(change.After.PlacementError, "insufficient resources"))
	require.Equal(t, clock.Now().UnixNano(), change.After.Since, "fail bumps since")
	require.Equal(t, uint32(1), change.After.ModificationTag.Index)
	require.Equal(t, []string{models.EventTypeActualLRPInstanceChanged}, eventTypes(t, s, seq))

	_, err = s.ClaimActualLRP(ctx, "app", 1, instanceKey("i", "c"))
	require.NoError(t, err)
	_, err = s.FailActualLRP(ctx, lrpKey("app", 1), "too late")
	requireErrorType(t, err, models.ErrTypeInvalidStateTransition)
	_, err = s.FailActualLRP(ctx, lrpKey("app", 9), "missing")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	_, err = s.FailActualLRP(ctx, nil, "nil")
	requireErrorType(t, err, models.ErrTypeInvalidRequest)
}

func TestRemoveActualLRP(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 3))
	ik := instanceKey("i-1", "cell-a")
	_, err := s.ClaimActualLRP(ctx, "app", 1, ik)
	require.NoError(t, err)

	tests := []struct {
		name  string
		index int32
		ik    *modelsv1.ActualLRPInstanceKey
		want  models.ErrorType
	}{
		{"wrong instance key", 1, instanceKey("i-other", "cell-a"), models.ErrTypeResourceConflict},
		{"matching instance key", 1, ik, ""},
		{"no instance key", 0, nil, ""},
		{"already removed", 0, nil, models.ErrTypeResourceNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := latest(t, s)
			change, err := s.RemoveActualLRP(ctx, "app", tt.index, tt.ik)
			if tt.want != "" {
				requireErrorType(t, err, tt.want)
				require.Empty(t, eventTypes(t, s, seq))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.index, change.Before.Index)
			require.Nil(t, change.After)
			require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))
			_, err = s.GetActualLRP(ctx, "app", tt.index, ordinary)
			requireErrorType(t, err, models.ErrTypeResourceNotFound)
		})
	}
}

// TestRetireActualLRP: one transaction deletes an unplaced ORDINARY row, or returns a
// placed one untouched for its rep to stop.
func TestRetireActualLRP(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 4))
	_, err := s.ClaimActualLRP(ctx, "app", 1, instanceKey("i-1", "cell-a"))
	require.NoError(t, err)
	startOn(t, s, "app", 2, instanceKey("i-2", "cell-a"))
	for i := range 3 { // the third crash in a row is not restarted at once
		ik := instanceKey(fmt.Sprintf("i-3-%d", i), "cell-a")
		startOn(t, s, "app", 3, ik)
		_, err = s.CrashActualLRP(ctx, lrpKey("app", 3), ik, "exit status 1")
		require.NoError(t, err)
	}
	row, err := s.GetActualLRP(ctx, "app", 3, ordinary)
	require.NoError(t, err)
	require.Equal(t, crashed, row.State)

	for _, tc := range []struct {
		name   string
		index  int32
		placed bool
	}{
		{"UNCLAIMED is deleted", 0, false},
		{"CLAIMED is left to its rep", 1, true},
		{"RUNNING is left to its rep", 2, true},
		{"CRASHED is deleted", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := s.GetActualLRP(ctx, "app", tc.index, ordinary)
			require.NoError(t, err)
			seq := latest(t, s)
			toStop, err := s.RetireActualLRP(ctx, "app", tc.index)
			require.NoError(t, err)
			after, getErr := s.GetActualLRP(ctx, "app", tc.index, ordinary)
			if tc.placed {
				requireProtoEqual(t, before, toStop)
				requireProtoEqual(t, before, after)
				require.Empty(t, eventTypes(t, s, seq))
				return
			}
			require.Nil(t, toStop)
			requireErrorType(t, getErr, models.ErrTypeResourceNotFound)
			require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))
		})
	}

	t.Run("a missing row is not found", func(t *testing.T) {
		_, err := s.RetireActualLRP(ctx, "app", 0)
		requireErrorType(t, err, models.ErrTypeResourceNotFound)
		_, err = s.RetireActualLRP(ctx, "nope", 0)
		requireErrorType(t, err, models.ErrTypeResourceNotFound)
	})
}

func TestListActualLRPsFilters(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("a", 2))
	other := newDesiredLRP("b", 1)
	other.Domain = "other"
	desire(t, s, other)
	_, err := s.ClaimActualLRP(ctx, "a", 1, instanceKey("i", "cell-x"))
	require.NoError(t, err)
	one := int32(1)

	tests := []struct {
		name   string
		filter store.ActualLRPFilter
		want   []string
	}{
		{"all", store.ActualLRPFilter{}, []string{"a/0", "a/1", "b/0"}},
		{"domain", store.ActualLRPFilter{Domain: "other"}, []string{"b/0"}},
		{"cell", store.ActualLRPFilter{CellID: "cell-x"}, []string{"a/1"}},
		{"process guid", store.ActualLRPFilter{ProcessGuid: "a"}, []string{"a/0", "a/1"}},
		{"index", store.ActualLRPFilter{Index: &one}, []string{"a/1"}},
		{"guid and index", store.ActualLRPFilter{ProcessGuid: "b", Index: &one}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lrps, err := s.ListActualLRPs(ctx, tt.filter)
			require.NoError(t, err)
			var got []string
			for _, a := range lrps {
				got = append(got, a.ProcessGuid+"/"+string(rune('0'+a.Index)))
			}
			require.Equal(t, tt.want, got)
		})
	}
}
