package store_test

import (
	"testing"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// conditionOf is the condition a plan would carry for row a.
func conditionOf(a *modelsv1.ActualLRP) *bbsv1.LRPRowCondition {
	return &bbsv1.LRPRowCondition{
		Key:             &modelsv1.ActualLRPKey{ProcessGuid: a.GetProcessGuid(), Index: a.GetIndex(), Domain: a.GetDomain()},
		Presence:        a.GetPresence(),
		State:           a.GetState(),
		ModificationTag: proto.CloneOf(a.GetModificationTag()),
	}
}

// runningRow desires guid with one instance and starts it on cell-a.
func runningRow(t *testing.T, s *store.Postgres, guid string) *modelsv1.ActualLRP {
	t.Helper()
	desire(t, s, newDesiredLRP(guid, 1))
	change, err := s.StartActualLRP(testContext(t), lrpKey(guid, 0), instanceKey("i-"+guid, "cell-a"), netInfo("10.0.0.1"), store.StartOptions{})
	require.NoError(t, err)
	return change.After
}

// apply applies an action and fails the test on error.
func apply(t *testing.T, s *store.Postgres, a *bbsv1.LRPAction) *store.LRPActionOutcome {
	t.Helper()
	outcome, err := s.ApplyLRPAction(testContext(t), a)
	require.NoError(t, err)
	return outcome
}

// requireRefusedWithoutHarm applies an action that must be refused and checks that no
// row, tag or event changed.
func requireRefusedWithoutHarm(t *testing.T, s *store.Postgres, a *bbsv1.LRPAction, reason string) {
	t.Helper()
	rows, err := s.ListActualLRPs(testContext(t), store.ActualLRPFilter{})
	require.NoError(t, err)
	seq := latest(t, s)
	outcome := apply(t, s, a)
	require.Contains(t, outcome.Refused, reason)
	require.Nil(t, outcome.Auction)
	require.Nil(t, outcome.ToStop)
	after, err := s.ListActualLRPs(testContext(t), store.ActualLRPFilter{})
	require.NoError(t, err)
	requireProtosEqual(t, rows, after)
	require.Equal(t, seq, latest(t, s), "no events")
}

func TestApplyLRPActionCreateMissing(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 2))
	_, err := s.RemoveActualLRP(ctx, "app", 1, nil)
	require.NoError(t, err)
	desired, err := s.GetDesiredLRP(ctx, "app")
	require.NoError(t, err)
	create := func(index int32, tag *modelsv1.ModificationTag) *bbsv1.LRPAction {
		return &bbsv1.LRPAction{Reason: "missing", Action: &bbsv1.LRPAction_CreateMissing{CreateMissing: &bbsv1.CreateMissingLRPAction{
			Key: lrpKey("app", index), DesiredModificationTag: tag}}}
	}
	staleTag := &modelsv1.ModificationTag{Epoch: desired.ModificationTag.Epoch, Index: desired.ModificationTag.Index + 1}

	t.Run("a plan whose desired LRP moved on is refused without harm", func(t *testing.T) {
		requireRefusedWithoutHarm(t, s, create(1, staleTag), "desired lrp moved on")
	})
	t.Run("an index at or above instances is refused", func(t *testing.T) {
		requireRefusedWithoutHarm(t, s, create(2, desired.ModificationTag), "not below instances")
	})
	t.Run("an index with an ordinary row is refused", func(t *testing.T) {
		requireRefusedWithoutHarm(t, s, create(0, desired.ModificationTag), "ordinary row exists")
	})
	t.Run("a missing index is created and auctioned", func(t *testing.T) {
		seq := latest(t, s)
		outcome := apply(t, s, create(1, desired.ModificationTag))
		require.Empty(t, outcome.Refused)
		requireProtoEqual(t, lrpKey("app", 1), outcome.Auction)
		row, err := s.GetActualLRP(ctx, "app", 1, ordinary)
		require.NoError(t, err)
		require.Equal(t, unclaimed, row.State)
		require.Equal(t, []string{models.EventTypeActualLRPInstanceCreated}, eventTypes(t, s, seq))
	})
}

func TestApplyLRPActionUnclaim(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	row := runningRow(t, s, "app")
	stale := conditionOf(row)
	stale.ModificationTag.Index--

	requireRefusedWithoutHarm(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_UnclaimReplacement{UnclaimReplacement: stale}}, "row moved on: state RUNNING")

	seq := latest(t, s)
	outcome := apply(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_UnclaimReplacement{UnclaimReplacement: conditionOf(row)}})
	require.Empty(t, outcome.Refused)
	requireProtoEqual(t, lrpKey("app", 0), outcome.Auction)
	after, err := s.GetActualLRP(ctx, "app", 0, ordinary)
	require.NoError(t, err)
	require.Equal(t, unclaimed, after.State)
	require.Empty(t, after.InstanceGuid)
	require.Empty(t, after.CellId)
	require.Nil(t, after.NetInfo)
	require.Equal(t, row.ModificationTag.Index+1, after.ModificationTag.Index)
	require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved, models.EventTypeActualLRPInstanceCreated}, eventTypes(t, s, seq))

	t.Run("a stale unclaimed row is left as is and auctioned", func(t *testing.T) {
		seq := latest(t, s)
		outcome := apply(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_Unclaim{Unclaim: conditionOf(after)}})
		require.Empty(t, outcome.Refused)
		requireProtoEqual(t, lrpKey("app", 0), outcome.Auction)
		require.Empty(t, eventTypes(t, s, seq))
	})
}

func TestApplyLRPActionSuspectLifecycle(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	row := runningRow(t, s, "app")
	mark := &bbsv1.LRPAction{Reason: "cell vanished", Action: &bbsv1.LRPAction_MarkSuspect{MarkSuspect: conditionOf(row)}}

	seq := latest(t, s)
	outcome := apply(t, s, mark)
	require.Empty(t, outcome.Refused)
	requireProtoEqual(t, lrpKey("app", 0), outcome.Auction)
	suspectRow, err := s.GetActualLRP(ctx, "app", 0, suspect)
	require.NoError(t, err)
	require.Equal(t, running, suspectRow.State)
	require.Equal(t, row.InstanceGuid, suspectRow.InstanceGuid)
	require.Equal(t, row.ModificationTag.Index+1, suspectRow.ModificationTag.Index)
	replacement, err := s.GetActualLRP(ctx, "app", 0, ordinary)
	require.NoError(t, err)
	require.Equal(t, unclaimed, replacement.State)
	require.Equal(t, []string{models.EventTypeActualLRPInstanceChanged, models.EventTypeActualLRPInstanceCreated}, eventTypes(t, s, seq))

	t.Run("marking again is refused: the row moved on", func(t *testing.T) {
		requireRefusedWithoutHarm(t, s, mark, "row moved on: state UNCLAIMED")
	})

	promote := &bbsv1.LRPAction{Action: &bbsv1.LRPAction_PromoteSuspect{PromoteSuspect: &bbsv1.PromoteSuspectLRPAction{
		Suspect: conditionOf(suspectRow), Replacement: conditionOf(replacement)}}}
	t.Run("promotion is refused when the replacement moved on", func(t *testing.T) {
		_, err := s.ClaimActualLRP(ctx, "app", 0, instanceKey("i-2", "cell-b"))
		require.NoError(t, err)
		requireRefusedWithoutHarm(t, s, promote, "replacement row moved on: state CLAIMED")
		claimed, err := s.GetActualLRP(ctx, "app", 0, ordinary)
		require.NoError(t, err)
		unclaimNow := apply(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_UnclaimReplacement{UnclaimReplacement: conditionOf(claimed)}})
		require.Empty(t, unclaimNow.Refused)
		replacement, err = s.GetActualLRP(ctx, "app", 0, ordinary)
		require.NoError(t, err)
	})
	t.Run("promotion deletes the replacement and makes the suspect ordinary", func(t *testing.T) {
		seq := latest(t, s)
		promote.GetPromoteSuspect().Replacement = conditionOf(replacement)
		outcome := apply(t, s, promote)
		require.Empty(t, outcome.Refused)
		rows, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{ProcessGuid: "app"})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, ordinary, rows[0].Presence)
		require.Equal(t, running, rows[0].State)
		require.Equal(t, row.InstanceGuid, rows[0].InstanceGuid)
		require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved, models.EventTypeActualLRPInstanceChanged}, eventTypes(t, s, seq))
	})
}

func TestApplyLRPActionRemoveSuspect(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	row := runningRow(t, s, "app")
	apply(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_MarkSuspect{MarkSuspect: conditionOf(row)}})
	suspectRow, err := s.GetActualLRP(ctx, "app", 0, suspect)
	require.NoError(t, err)

	requireRefusedWithoutHarm(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_Remove{Remove: conditionOf(row)}}, "row moved on")

	seq := latest(t, s)
	outcome := apply(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_Remove{Remove: conditionOf(suspectRow)}})
	require.Empty(t, outcome.Refused)
	_, err = s.GetActualLRP(ctx, "app", 0, suspect)
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))

	requireRefusedWithoutHarm(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_Remove{Remove: conditionOf(suspectRow)}}, "row is gone")
}

func TestApplyLRPActionRetire(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	row := runningRow(t, s, "placed")

	t.Run("a placed row is left to its rep", func(t *testing.T) {
		seq := latest(t, s)
		outcome := apply(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_Retire{Retire: conditionOf(row)}})
		require.Empty(t, outcome.Refused)
		requireProtoEqual(t, row, outcome.ToStop)
		require.Empty(t, eventTypes(t, s, seq))
	})
	t.Run("an unplaced row is deleted", func(t *testing.T) {
		created := desire(t, s, newDesiredLRP("unplaced", 1)).Created[0]
		seq := latest(t, s)
		outcome := apply(t, s, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_Retire{Retire: conditionOf(created)}})
		require.Empty(t, outcome.Refused)
		require.Nil(t, outcome.ToStop)
		_, err := s.GetActualLRP(ctx, "unplaced", 0, ordinary)
		requireErrorType(t, err, models.ErrTypeResourceNotFound)
		require.Equal(t, []string{models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))
	})
	t.Run("a malformed action is an invalid request", func(t *testing.T) {
		_, err := s.ApplyLRPAction(ctx, &bbsv1.LRPAction{})
		requireErrorType(t, err, models.ErrTypeInvalidRequest)
		_, err = s.ApplyLRPAction(ctx, &bbsv1.LRPAction{Action: &bbsv1.LRPAction_Retire{Retire: &bbsv1.LRPRowCondition{}}})
		requireErrorType(t, err, models.ErrTypeInvalidRequest)
	})
}
