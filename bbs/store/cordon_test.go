package store_test

import (
	"testing"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

// cordonsOf maps the cell ids of cells to their cordon reason, cordoned ones only.
func cordonsOf(cells []*modelsv1.CellPresence) map[string]string {
	cordons := map[string]string{}
	for _, c := range cells {
		if c.GetCordoned() {
			cordons[c.GetCellId()] = c.GetCordonReason()
		}
	}
	return cordons
}

func TestCordonCell(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	require.NoError(t, s.HeartbeatCell(ctx, newCell("cell-a"), 15*time.Second))
	require.NoError(t, s.HeartbeatCell(ctx, newCell("cell-b"), 15*time.Second))

	requireErrorType(t, s.CordonCell(ctx, "", "x"), models.ErrTypeInvalidRequest)
	_, err := s.UncordonCell(ctx, "")
	requireErrorType(t, err, models.ErrTypeInvalidRequest)

	require.NoError(t, s.CordonCell(ctx, "cell-a", "kernel upgrade"))
	cells, err := s.ListLiveCells(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cell-a": "kernel upgrade"}, cordonsOf(cells))
	require.Len(t, cells, 2)
	cell, err := s.GetCell(ctx, "cell-a")
	require.NoError(t, err)
	require.True(t, cell.GetCordoned())
	require.Equal(t, "kernel upgrade", cell.GetCordonReason())
	require.Equal(t, map[string]string{"cell-a": "kernel upgrade"}, cordonsOf(takeSnapshot(t, s).GetCells()), "the snapshot's cells carry cordons")

	t.Run("cordoning again updates the reason", func(t *testing.T) {
		require.NoError(t, s.CordonCell(ctx, "cell-a", "disk replacement"))
		cells, err := s.ListLiveCells(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"cell-a": "disk replacement"}, cordonsOf(cells))
	})

	t.Run("a heartbeat keeps the cordon, whatever the rep sends", func(t *testing.T) {
		clock.Advance(10 * time.Second)
		renewed := newCell("cell-a")
		renewed.Cordoned, renewed.CordonReason = false, ""
		require.NoError(t, s.HeartbeatCell(ctx, renewed, 15*time.Second))
		liar := newCell("cell-b")
		liar.Cordoned, liar.CordonReason = true, "self-declared"
		require.NoError(t, s.HeartbeatCell(ctx, liar, 15*time.Second))
		cells, err := s.ListLiveCells(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"cell-a": "disk replacement"}, cordonsOf(cells))
	})

	t.Run("a cordon outlives the presence", func(t *testing.T) {
		clock.Advance(time.Minute)
		cells, err := s.ListLiveCells(ctx)
		require.NoError(t, err)
		require.Empty(t, cells)
		require.NoError(t, s.HeartbeatCell(ctx, newCell("cell-a"), 15*time.Second))
		cell, err := s.GetCell(ctx, "cell-a")
		require.NoError(t, err)
		require.True(t, cell.GetCordoned())
	})

	t.Run("a cell can be cordoned before it has a presence", func(t *testing.T) {
		require.NoError(t, s.CordonCell(ctx, "cell-new", "not yet"))
		require.NoError(t, s.HeartbeatCell(ctx, newCell("cell-new"), 15*time.Second))
		cell, err := s.GetCell(ctx, "cell-new")
		require.NoError(t, err)
		require.Equal(t, "not yet", cell.GetCordonReason())
	})

	t.Run("uncordon says whether there was a cordon", func(t *testing.T) {
		was, err := s.UncordonCell(ctx, "cell-a")
		require.NoError(t, err)
		require.True(t, was)
		was, err = s.UncordonCell(ctx, "cell-a")
		require.NoError(t, err)
		require.False(t, was)
		cell, err := s.GetCell(ctx, "cell-a")
		require.NoError(t, err)
		require.False(t, cell.GetCordoned())
		require.Empty(t, cell.GetCordonReason())
	})
}

func TestListUnplaced(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	_, err := s.DesireLRP(ctx, newDesiredLRP("app", 3))
	require.NoError(t, err)
	for _, index := range []int32{2, 0} {
		clock.Advance(time.Second)
		_, err = s.FailActualLRP(ctx, &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: index, Domain: "cf-apps"}, "all compatible cells are cordoned: cell-1")
		require.NoError(t, err)
	}
	_, err = s.DesireTask(ctx, "pending", "cf-tasks", newTaskDefinition())
	require.NoError(t, err)
	_, err = s.DesireTask(ctx, "running", "cf-tasks", newTaskDefinition())
	require.NoError(t, err)
	_, _, err = s.StartTask(ctx, "running", "cell-1")
	require.NoError(t, err)

	lrps, tasks, err := s.ListUnplaced(ctx, 10)
	require.NoError(t, err)
	var keys []int32
	for _, a := range lrps {
		require.Equal(t, "app", a.GetProcessGuid())
		keys = append(keys, a.GetIndex())
	}
	require.ElementsMatch(t, []int32{0, 2}, keys, "UNCLAIMED with a placement error; index 1 is still in flight")
	require.Len(t, tasks, 1)
	require.Equal(t, "pending", tasks[0].GetTaskGuid())
	require.NotNil(t, tasks[0].GetTaskDefinition(), "tasks come with their definitions")

	lrps, tasks, err = s.ListUnplaced(ctx, 1)
	require.NoError(t, err)
	require.Len(t, lrps, 1)
	require.Len(t, tasks, 1)
	_, _, err = s.ListUnplaced(ctx, 0)
	requireErrorType(t, err, models.ErrTypeInvalidRequest)
	lrps, tasks, err = s.ForCell("cell-1").ListUnplaced(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, lrps, "a cell reads only what is placed on it")
	require.Empty(t, tasks)
}
