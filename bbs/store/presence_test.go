package store_test

import (
	"testing"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

const evacuating = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING

// rawDB opens a plain connection to a test database, for setting up rows that only
// convergence or evacuation would create and for looking at what is stored.
func rawDB(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(testContext(t), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(testContext(t)) })
	return conn
}

// newStoreAndDB is a store and a raw connection to its database.
func newStoreAndDB(t testing.TB) (*store.Postgres, *pgx.Conn) {
	url := storetest.NewDatabase(t)
	return storetest.NewStoreWithConfig(t, store.Config{URL: url}), rawDB(t, url)
}

// copyRowAs copies the ORDINARY row of an index into another presence, as convergence
// (SUSPECT) or evacuation (EVACUATING) does, and then unclaims the ORDINARY row.
func copyRowAs(t testing.TB, db *pgx.Conn, guid string, index int32, presence modelsv1.ActualLRPPresence) {
	t.Helper()
	ctx := testContext(t)
	_, err := db.Exec(ctx, `INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, state,
    instance_guid, cell_id, net_info, since, modification_tag_epoch, modification_tag_index, routable)
SELECT process_guid, instance_index, $3, domain, state, instance_guid, cell_id, net_info, since,
    modification_tag_epoch, modification_tag_index, routable
FROM actual_lrps WHERE process_guid = $1 AND instance_index = $2 AND presence = $4`,
		guid, index, int16(presence), int16(ordinary))
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE actual_lrps SET state = $3, instance_guid = '', cell_id = '', net_info = NULL,
    routable = false WHERE process_guid = $1 AND instance_index = $2 AND presence = $4`,
		guid, index, int16(unclaimed), int16(ordinary))
	require.NoError(t, err)
}

func TestSuspectRows(t *testing.T) {
	t.Parallel()
	s, db := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 1))
	suspectKey := instanceKey("i-suspect", "cell-gone")
	_, err := s.StartActualLRP(ctx, lrpKey("app", 0), suspectKey, netInfo("1.2.3.4"), store.StartOptions{})
	require.NoError(t, err)
	copyRowAs(t, db, "app", 0, suspect)
	suspectRow, err := s.GetActualLRP(ctx, "app", 0, suspect)
	require.NoError(t, err)

	t.Run("claim by the suspect instance is ignored", func(t *testing.T) {
		seq := latest(t, s)
		change, err := s.ClaimActualLRP(ctx, "app", 0, suspectKey)
		require.NoError(t, err)
		requireProtoEqual(t, suspectRow, change.After)
		ord, err := s.GetActualLRP(ctx, "app", 0, ordinary)
		require.NoError(t, err)
		require.Equal(t, unclaimed, ord.State)
		require.Empty(t, eventTypes(t, s, seq))
	})
	t.Run("start by the suspect instance is ignored", func(t *testing.T) {
		seq := latest(t, s)
		_, err := s.StartActualLRP(ctx, lrpKey("app", 0), suspectKey, netInfo("1.2.3.4"), store.StartOptions{})
		require.NoError(t, err)
		ord, err := s.GetActualLRP(ctx, "app", 0, ordinary)
		require.NoError(t, err)
		require.Equal(t, unclaimed, ord.State)
		require.Empty(t, eventTypes(t, s, seq))
	})
	t.Run("the replacement starting removes the suspect", func(t *testing.T) {
		seq := latest(t, s)
		change, err := s.StartActualLRP(ctx, lrpKey("app", 0), instanceKey("i-new", "cell-b"), netInfo("5.6.7.8"), store.StartOptions{})
		require.NoError(t, err)
		require.Equal(t, running, change.After.State)
		_, err = s.GetActualLRP(ctx, "app", 0, suspect)
		requireErrorType(t, err, models.ErrTypeResourceNotFound)
		require.Equal(t, []string{models.EventTypeActualLRPInstanceChanged, models.EventTypeActualLRPInstanceRemoved},
			eventTypes(t, s, seq))
		events, err := s.EventsAfter(ctx, seq+1, 1)
		require.NoError(t, err)
		require.Equal(t, suspect, events[0].GetActualLrpInstanceRemoved().GetActualLrp().GetPresence())
	})
}

func TestCrashOfSuspectDeletesIt(t *testing.T) {
	t.Parallel()
	s, db := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 1))
	suspectKey := instanceKey("i-suspect", "cell-gone")
	_, err := s.StartActualLRP(ctx, lrpKey("app", 0), suspectKey, netInfo("1.2.3.4"), store.StartOptions{})
	require.NoError(t, err)
	copyRowAs(t, db, "app", 0, suspect)

	seq := latest(t, s)
	result, err := s.CrashActualLRP(ctx, lrpKey("app", 0), suspectKey, "cell went away")
	require.NoError(t, err)
	require.False(t, result.Restart)
	require.Equal(t, suspect, result.Before.Presence)
	require.Nil(t, result.After)
	require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))
	lrps, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{ProcessGuid: "app"})
	require.NoError(t, err)
	require.Len(t, lrps, 1)
	require.Equal(t, ordinary, lrps[0].Presence)
	require.Equal(t, int32(0), lrps[0].CrashCount, "the replacement is untouched")
}

func TestEvacuatingRows(t *testing.T) {
	t.Parallel()
	s, db := newStoreAndDB(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 2))
	oldKey := instanceKey("i-old", "cell-draining")
	for i := range int32(2) {
		_, err := s.StartActualLRP(ctx, lrpKey("app", i), oldKey, netInfo("1.2.3.4"), store.StartOptions{})
		require.NoError(t, err)
		copyRowAs(t, db, "app", i, evacuating)
	}

	seq := latest(t, s)
	_, err := s.StartActualLRP(ctx, lrpKey("app", 0), instanceKey("i-new", "cell-b"), netInfo("5.6.7.8"), store.StartOptions{})
	require.NoError(t, err)
	_, err = s.GetActualLRP(ctx, "app", 0, evacuating)
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	require.Equal(t, []string{models.EventTypeActualLRPInstanceChanged, models.EventTypeActualLRPInstanceRemoved},
		eventTypes(t, s, seq))

	// Scaling down and removing never touch EVACUATING rows: their rep handles them.
	zero := int32(0)
	change, err := s.UpdateDesiredLRP(ctx, "app", &modelsv1.DesiredLRPUpdate{Instances: &zero})
	require.NoError(t, err)
	require.Len(t, change.ToStop, 1)
	require.Equal(t, ordinary, change.ToStop[0].Presence)
	require.Equal(t, int32(0), change.ToStop[0].Index)
	_, err = s.GetActualLRP(ctx, "app", 1, evacuating)
	require.NoError(t, err)
	removed, err := s.RemoveDesiredLRP(ctx, "app")
	require.NoError(t, err)
	require.Len(t, removed.ToStop, 1)
	_, err = s.GetActualLRP(ctx, "app", 1, evacuating)
	require.NoError(t, err)
}
