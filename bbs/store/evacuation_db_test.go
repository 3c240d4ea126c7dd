package store_test

import (
	"testing"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Instance keys of the evacuation tests: the draining cell's instance and the
// replacement placed on another cell.
var (
	drainingKey    = instanceKey("i-old", "cell-draining")
	replacementKey = instanceKey("i-new", "cell-b")
)

// runningOpts are the options an evacuating rep reports.
var runningOpts = store.StartOptions{Routable: true, AvailabilityZone: "z1", InternalRoutes: []string{"app.internal"}}

// indexRows returns the rows of one index by presence.
func indexRows(t testing.TB, s *store.Postgres, guid string, index int32) map[modelsv1.ActualLRPPresence]*modelsv1.ActualLRP {
	t.Helper()
	lrps, err := s.ListActualLRPs(testContext(t), store.ActualLRPFilter{ProcessGuid: guid, Index: &index})
	require.NoError(t, err)
	rows := map[modelsv1.ActualLRPPresence]*modelsv1.ActualLRP{}
	for _, a := range lrps {
		rows[a.Presence] = a
	}
	return rows
}

// startOn reports an index RUNNING for an instance.
func startOn(t testing.TB, s *store.Postgres, guid string, index int32, ik *modelsv1.ActualLRPInstanceKey) {
	t.Helper()
	_, err := s.StartActualLRP(testContext(t), lrpKey(guid, index), ik, netInfo("1.2.3.4"), store.StartOptions{Routable: true})
	require.NoError(t, err)
}

// evacuateRunning calls EvacuateRunningActualLRP for the draining instance.
func evacuateRunning(t testing.TB, s *store.Postgres, guid string, index int32, address string) *store.EvacuationResult {
	t.Helper()
	result, err := s.EvacuateRunningActualLRP(testContext(t), lrpKey(guid, index), drainingKey, netInfo(address), runningOpts)
	require.NoError(t, err)
	return result
}

// setOrdinaryState forces the ORDINARY row of an index into a state for another
// instance (or none), as a replacement that progressed behind the test's back.
func setOrdinaryState(t testing.TB, db *pgx.Conn, guid string, index int32, state modelsv1.ActualLRPState, ik *modelsv1.ActualLRPInstanceKey) {
	t.Helper()
	_, err := db.Exec(testContext(t), `UPDATE actual_lrps SET state = $3, instance_guid = $4, cell_id = $5
WHERE process_guid = $1 AND instance_index = $2 AND presence = $6`,
		guid, index, int16(state), ik.GetInstanceGuid(), ik.GetCellId(), int16(ordinary))
	require.NoError(t, err)
}

// TestEvacuationDance walks one index through a whole drain: evacuate (keep), refresh
// while the replacement is placed, the replacement's start removes the EVACUATING row,
// evacuate again (stop), and the stop report leaves the replacement alone.
func TestEvacuationDance(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 1))
	startOn(t, s, "app", 0, drainingKey)
	before := indexRows(t, s, "app", 0)[ordinary]

	seq := latest(t, s)
	result := evacuateRunning(t, s, "app", 0, "9.9.9.9")
	require.True(t, result.KeepContainer)
	require.True(t, result.Auction)

	rows := indexRows(t, s, "app", 0)
	require.Len(t, rows, 2)
	evac := rows[evacuating]
	require.Equal(t, running, evac.State)
	require.Equal(t, "i-old", evac.InstanceGuid)
	require.Equal(t, "cell-draining", evac.CellId)
	require.Equal(t, "9.9.9.9", evac.NetInfo.GetAddress(), "net info comes from the request")
	require.True(t, evac.Routable)
	require.Equal(t, []string{"app.internal"}, evac.InternalRoutes)
	require.Equal(t, before.ModificationTag.Index+1, evac.ModificationTag.Index)
	require.Equal(t, before.Since, evac.Since, "still running since it started")
	ord := rows[ordinary]
	require.Equal(t, unclaimed, ord.State)
	require.Empty(t, ord.InstanceGuid)
	require.Empty(t, ord.CellId)
	require.Nil(t, ord.NetInfo)
	require.False(t, ord.Routable)
	require.Equal(t, before.ModificationTag.Index+1, ord.ModificationTag.Index)
	require.NoError(t, models.ValidateActualLRP(ord))
	require.NoError(t, models.ValidateActualLRP(evac))

	require.Equal(t, []string{models.EventTypeActualLRPInstanceChanged, models.EventTypeActualLRPInstanceCreated},
		eventTypes(t, s, seq), "one changed event for the copy, one created event for the UNCLAIMED row")
	events, err := s.EventsAfter(ctx, seq, 0)
	require.NoError(t, err)
	changed := events[0].GetActualLrpInstanceChanged()
	require.Equal(t, ordinary, changed.GetBefore().GetPresence())
	require.Equal(t, evacuating, changed.GetAfter().GetPresence())
	require.Equal(t, unclaimed, events[1].GetActualLrpInstanceCreated().GetActualLrp().GetState())

	t.Run("the EVACUATING row is listed and in the convergence snapshot", func(t *testing.T) {
		lrps, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{CellID: "cell-draining"})
		require.NoError(t, err)
		require.Len(t, lrps, 1)
		requireProtoEqual(t, evac, lrps[0])
		snap := mergeSnapshot(t, snapshotMessages(t, s))
		var presences []modelsv1.ActualLRPPresence
		for _, a := range snap.GetActualLrps() {
			presences = append(presences, a.GetPresence())
		}
		require.Equal(t, []modelsv1.ActualLRPPresence{ordinary, evacuating}, presences)
	})

	t.Run("again while the replacement is unplaced: refresh, keep", func(t *testing.T) {
		seq := latest(t, s)
		result := evacuateRunning(t, s, "app", 0, "8.8.8.8")
		require.True(t, result.KeepContainer)
		require.False(t, result.Auction)
		rows := indexRows(t, s, "app", 0)
		require.Equal(t, "8.8.8.8", rows[evacuating].NetInfo.GetAddress())
		require.Equal(t, evac.ModificationTag.Index+1, rows[evacuating].ModificationTag.Index)
		requireProtoEqual(t, ord, rows[ordinary])
		require.Equal(t, []string{models.EventTypeActualLRPInstanceChanged}, eventTypes(t, s, seq))

		seq = latest(t, s)
		require.True(t, evacuateRunning(t, s, "app", 0, "8.8.8.8").KeepContainer)
		require.Empty(t, eventTypes(t, s, seq), "an unchanged report is a no-op")
	})

	t.Run("again while the replacement is claimed: keep", func(t *testing.T) {
		_, err := s.ClaimActualLRP(ctx, "app", 0, replacementKey)
		require.NoError(t, err)
		require.True(t, evacuateRunning(t, s, "app", 0, "8.8.8.8").KeepContainer)
		require.Len(t, indexRows(t, s, "app", 0), 2)
	})

	t.Run("the replacement's start removes the EVACUATING row", func(t *testing.T) {
		startOn(t, s, "app", 0, replacementKey)
		rows := indexRows(t, s, "app", 0)
		require.Len(t, rows, 1)
		require.Equal(t, "i-new", rows[ordinary].InstanceGuid)
		require.Equal(t, running, rows[ordinary].State)
	})

	replacement := indexRows(t, s, "app", 0)[ordinary]
	t.Run("again once the replacement runs: stop, change nothing", func(t *testing.T) {
		seq := latest(t, s)
		result := evacuateRunning(t, s, "app", 0, "8.8.8.8")
		require.False(t, result.KeepContainer)
		require.False(t, result.Auction)
		require.Empty(t, eventTypes(t, s, seq))
		rows := indexRows(t, s, "app", 0)
		require.Len(t, rows, 1)
		requireProtoEqual(t, replacement, rows[ordinary])
	})

	t.Run("the stop report leaves the replacement alone", func(t *testing.T) {
		seq := latest(t, s)
		result, err := s.EvacuateStoppedActualLRP(ctx, lrpKey("app", 0), drainingKey)
		require.NoError(t, err)
		require.False(t, result.KeepContainer)
		require.Empty(t, eventTypes(t, s, seq))
		requireProtoEqual(t, replacement, indexRows(t, s, "app", 0)[ordinary])
	})
}

func TestEvacuateRunningStopsWhenTheReplacementIsDone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		state modelsv1.ActualLRPState
		ik    *modelsv1.ActualLRPInstanceKey
	}{
		{"replacement RUNNING", running, replacementKey},
		{"replacement CRASHED", crashed, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, db := newStoreAndDB(t)
			desire(t, s, newDesiredLRP("app", 1))
			startOn(t, s, "app", 0, drainingKey)
			require.True(t, evacuateRunning(t, s, "app", 0, "1.2.3.4").KeepContainer)
			setOrdinaryState(t, db, "app", 0, tc.state, tc.ik)

			seq := latest(t, s)
			result := evacuateRunning(t, s, "app", 0, "1.2.3.4")
			require.False(t, result.KeepContainer)
			require.False(t, result.Auction)
			rows := indexRows(t, s, "app", 0)
			require.Len(t, rows, 1, "the EVACUATING row is deleted")
			require.Equal(t, tc.state, rows[ordinary].State, "the replacement is untouched")
			require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))
		})
	}
}

func TestEvacuateRunningWithoutDesiredLRP(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 2))
	startOn(t, s, "app", 0, drainingKey)
	startOn(t, s, "app", 1, drainingKey)
	require.True(t, evacuateRunning(t, s, "app", 0, "1.2.3.4").KeepContainer)
	_, err := s.RemoveDesiredLRP(ctx, "app")
	require.NoError(t, err)

	result := evacuateRunning(t, s, "app", 0, "1.2.3.4")
	require.False(t, result.KeepContainer)
	require.Empty(t, indexRows(t, s, "app", 0), "the EVACUATING row is deleted")

	result = evacuateRunning(t, s, "app", 1, "1.2.3.4")
	require.False(t, result.KeepContainer)
	require.False(t, result.Auction)
	require.Empty(t, indexRows(t, s, "app", 1), "the caller's ORDINARY row of a removed LRP is deleted")
}

func TestEvacuateRunningAfterScaleDown(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 1))
	startOn(t, s, "app", 0, drainingKey)
	require.True(t, evacuateRunning(t, s, "app", 0, "1.2.3.4").KeepContainer)
	zero := int32(0)
	_, err := s.UpdateDesiredLRP(ctx, "app", &modelsv1.DesiredLRPUpdate{Instances: &zero})
	require.NoError(t, err)
	require.Len(t, indexRows(t, s, "app", 0), 1, "scaling down deletes the UNCLAIMED replacement only")

	result := evacuateRunning(t, s, "app", 0, "1.2.3.4")
	require.False(t, result.KeepContainer)
	require.Empty(t, indexRows(t, s, "app", 0))
}

func TestEvacuateRunningOfAnotherInstanceChangesNothing(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	desire(t, s, newDesiredLRP("app", 1))
	startOn(t, s, "app", 0, replacementKey)
	before := indexRows(t, s, "app", 0)

	seq := latest(t, s)
	result := evacuateRunning(t, s, "app", 0, "1.2.3.4")
	require.False(t, result.KeepContainer)
	require.False(t, result.Auction)
	require.Empty(t, eventTypes(t, s, seq))
	requireProtoEqual(t, before[ordinary], indexRows(t, s, "app", 0)[ordinary])
}

func TestEvacuateRunningClaimedInstance(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	desire(t, s, newDesiredLRP("app", 1))
	_, err := s.ClaimActualLRP(testContext(t), "app", 0, drainingKey)
	require.NoError(t, err)

	result := evacuateRunning(t, s, "app", 0, "1.2.3.4")
	require.True(t, result.KeepContainer)
	require.True(t, result.Auction)
	rows := indexRows(t, s, "app", 0)
	require.Equal(t, running, rows[evacuating].State, "the copy runs: the rep says so")
	require.Equal(t, unclaimed, rows[ordinary].State)
}

func TestEvacuateRunningRecreateStrategy(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	lrp := newDesiredLRP("app", 2)
	lrp.UpdateStrategy = modelsv1.UpdateStrategy_UPDATE_STRATEGY_RECREATE
	desire(t, s, lrp)
	startOn(t, s, "app", 0, drainingKey)

	seq := latest(t, s)
	result := evacuateRunning(t, s, "app", 0, "1.2.3.4")
	require.True(t, result.KeepContainer, "keep until every instance runs")
	require.False(t, result.Auction)
	require.Empty(t, eventTypes(t, s, seq))
	require.Len(t, indexRows(t, s, "app", 0), 1)

	startOn(t, s, "app", 1, drainingKey)
	result = evacuateRunning(t, s, "app", 0, "1.2.3.4")
	require.True(t, result.KeepContainer)
	require.True(t, result.Auction, "every instance runs: index 0 is handed over")
	require.Len(t, indexRows(t, s, "app", 0), 2)

	result = evacuateRunning(t, s, "app", 1, "1.2.3.4")
	require.True(t, result.KeepContainer)
	require.False(t, result.Auction, "one instance at a time: index 0 is not running yet")
	require.Len(t, indexRows(t, s, "app", 1), 1)
}

func TestEvacuateClaimed(t *testing.T) {
	t.Parallel()
	s, db := newStoreAndDB(t)
	ctx := testContext(t)

	t.Run("the caller's ORDINARY row is unclaimed for an auction", func(t *testing.T) {
		desire(t, s, newDesiredLRP("claimed", 1))
		_, err := s.ClaimActualLRP(ctx, "claimed", 0, drainingKey)
		require.NoError(t, err)
		seq := latest(t, s)
		result, err := s.EvacuateClaimedActualLRP(ctx, lrpKey("claimed", 0), drainingKey)
		require.NoError(t, err)
		require.False(t, result.KeepContainer)
		require.True(t, result.Auction)
		ord := indexRows(t, s, "claimed", 0)[ordinary]
		require.Equal(t, unclaimed, ord.State)
		require.Empty(t, ord.CellId)
		require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved, models.EventTypeActualLRPInstanceCreated},
			eventTypes(t, s, seq))
	})
	for _, presence := range []modelsv1.ActualLRPPresence{evacuating, suspect} {
		t.Run("the caller's "+models.PresenceName(presence)+" row is deleted", func(t *testing.T) {
			guid := "copy-" + models.PresenceName(presence)
			desire(t, s, newDesiredLRP(guid, 1))
			startOn(t, s, guid, 0, drainingKey)
			copyRowAs(t, db, guid, 0, presence)
			result, err := s.EvacuateClaimedActualLRP(ctx, lrpKey(guid, 0), drainingKey)
			require.NoError(t, err)
			require.False(t, result.KeepContainer)
			require.False(t, result.Auction)
			rows := indexRows(t, s, guid, 0)
			require.Len(t, rows, 1)
			require.Equal(t, unclaimed, rows[ordinary].State)
		})
	}
	t.Run("another instance's row is untouched", func(t *testing.T) {
		desire(t, s, newDesiredLRP("other", 1))
		startOn(t, s, "other", 0, replacementKey)
		seq := latest(t, s)
		result, err := s.EvacuateClaimedActualLRP(ctx, lrpKey("other", 0), drainingKey)
		require.NoError(t, err)
		require.False(t, result.KeepContainer)
		require.False(t, result.Auction)
		require.Empty(t, eventTypes(t, s, seq))
		require.Equal(t, running, indexRows(t, s, "other", 0)[ordinary].State)
	})
}

func TestEvacuateCrashed(t *testing.T) {
	t.Parallel()
	s, db := newStoreAndDB(t)
	ctx := testContext(t)

	t.Run("the caller's ORDINARY row crashes and restarts", func(t *testing.T) {
		desire(t, s, newDesiredLRP("ordinary", 1))
		startOn(t, s, "ordinary", 0, drainingKey)
		seq := latest(t, s)
		result, err := s.EvacuateCrashedActualLRP(ctx, lrpKey("ordinary", 0), drainingKey, "exit status 2")
		require.NoError(t, err)
		require.False(t, result.KeepContainer)
		require.True(t, result.Auction, "the first crash restarts at once")
		ord := indexRows(t, s, "ordinary", 0)[ordinary]
		require.Equal(t, unclaimed, ord.State)
		require.Equal(t, int32(1), ord.CrashCount)
		require.Equal(t, "exit status 2", ord.CrashReason)
		require.Equal(t, models.EventTypeActualLRPCrashed, eventTypes(t, s, seq)[0])
	})
	for _, presence := range []modelsv1.ActualLRPPresence{evacuating, suspect} {
		t.Run("the caller's "+models.PresenceName(presence)+" row is deleted", func(t *testing.T) {
			guid := "copy-" + models.PresenceName(presence)
			desire(t, s, newDesiredLRP(guid, 1))
			startOn(t, s, guid, 0, drainingKey)
			copyRowAs(t, db, guid, 0, presence)
			seq := latest(t, s)
			result, err := s.EvacuateCrashedActualLRP(ctx, lrpKey(guid, 0), drainingKey, "exit status 2")
			require.NoError(t, err)
			require.False(t, result.KeepContainer)
			require.False(t, result.Auction)
			rows := indexRows(t, s, guid, 0)
			require.Len(t, rows, 1)
			require.Zero(t, rows[ordinary].CrashCount, "the replacement is untouched")
			require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))
		})
	}
	t.Run("another instance's row is untouched", func(t *testing.T) {
		desire(t, s, newDesiredLRP("other", 1))
		startOn(t, s, "other", 0, replacementKey)
		result, err := s.EvacuateCrashedActualLRP(ctx, lrpKey("other", 0), drainingKey, "exit status 2")
		require.NoError(t, err)
		require.False(t, result.Auction)
		ord := indexRows(t, s, "other", 0)[ordinary]
		require.Equal(t, running, ord.State)
		require.Zero(t, ord.CrashCount)
	})
}

func TestEvacuateStoppedDeletesOnlyTheCallersRows(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 2))
	startOn(t, s, "app", 0, drainingKey)
	startOn(t, s, "app", 1, replacementKey)

	seq := latest(t, s)
	result, err := s.EvacuateStoppedActualLRP(ctx, lrpKey("app", 0), drainingKey)
	require.NoError(t, err)
	require.False(t, result.KeepContainer)
	require.Empty(t, indexRows(t, s, "app", 0), "the caller's ORDINARY row is deleted")
	require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))

	_, err = s.EvacuateStoppedActualLRP(ctx, lrpKey("app", 1), drainingKey)
	require.NoError(t, err)
	require.Len(t, indexRows(t, s, "app", 1), 1, "another instance's row stays")
}

func TestRemoveEvacuatingActualLRP(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 1))
	startOn(t, s, "app", 0, drainingKey)
	require.True(t, evacuateRunning(t, s, "app", 0, "1.2.3.4").KeepContainer)

	_, err := s.RemoveEvacuatingActualLRP(ctx, lrpKey("app", 0), replacementKey)
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	require.Len(t, indexRows(t, s, "app", 0), 2, "another instance's key removes nothing")

	seq := latest(t, s)
	change, err := s.RemoveEvacuatingActualLRP(ctx, lrpKey("app", 0), drainingKey)
	require.NoError(t, err)
	require.Equal(t, evacuating, change.Before.Presence)
	require.Nil(t, change.After)
	rows := indexRows(t, s, "app", 0)
	require.Len(t, rows, 1)
	require.Equal(t, unclaimed, rows[ordinary].State)
	require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))

	_, err = s.RemoveEvacuatingActualLRP(ctx, lrpKey("app", 0), drainingKey)
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
}

func TestEvacuationRequiresKeys(t *testing.T) {
	t.Parallel()
	s, _ := newStoreAndDB(t)
	ctx := testContext(t)
	key := lrpKey("app", 0)
	calls := map[string]func() error{
		"claimed without instance key": func() error {
			_, err := s.EvacuateClaimedActualLRP(ctx, key, nil)
			return err
		},
		"running without key": func() error {
			_, err := s.EvacuateRunningActualLRP(ctx, nil, drainingKey, netInfo("1.2.3.4"), runningOpts)
			return err
		},
		"running without net info": func() error {
			_, err := s.EvacuateRunningActualLRP(ctx, key, drainingKey, nil, runningOpts)
			return err
		},
		"stopped without instance key": func() error {
			_, err := s.EvacuateStoppedActualLRP(ctx, key, nil)
			return err
		},
		"crashed without key": func() error {
			_, err := s.EvacuateCrashedActualLRP(ctx, nil, drainingKey, "boom")
			return err
		},
		"remove evacuating without instance key": func() error {
			_, err := s.RemoveEvacuatingActualLRP(ctx, key, nil)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			requireErrorType(t, call(), models.ErrTypeInvalidRequest)
		})
	}
}
