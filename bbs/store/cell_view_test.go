package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// cellWorld is a store where cell-2 holds work: index 0 of "app" CLAIMED, index 1
// RUNNING, index 2 UNCLAIMED; task "t-run" RUNNING on cell-2, "t-pend" PENDING.
type cellWorld struct {
	db    *store.Postgres
	cell1 store.DB
	// own2 and own1 are the instance keys of cell-2's and cell-1's instances.
	own2, own1 *modelsv1.ActualLRPInstanceKey
}

func newCellWorld(t *testing.T) *cellWorld {
	t.Helper()
	db := storetest.NewStore(t)
	ctx := testContext(t)
	w := &cellWorld{db: db, cell1: db.ForCell("cell-1"), own2: instanceKey("i-2", "cell-2"), own1: instanceKey("i-1", "cell-1")}
	desire(t, db, newDesiredLRP("app", 3))
	_, err := db.ClaimActualLRP(ctx, "app", 0, w.own2)
	require.NoError(t, err)
	startOn(t, db, "app", 1, w.own2)
	for _, guid := range []string{"t-run", "t-pend"} {
		_, err = db.DesireTask(ctx, guid, "cf-apps", &modelsv1.TaskDefinition{Rootfs: "preloaded:cflinuxfs4",
			Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "vcap"}}}})
		require.NoError(t, err)
	}
	_, _, err = db.StartTask(ctx, "t-run", "cell-2")
	require.NoError(t, err)
	require.NoError(t, db.HeartbeatCell(ctx, &modelsv1.CellPresence{CellId: "cell-2", RepAddress: "127.0.0.1:1", Zone: "z1",
		Capacity: &modelsv1.CellCapacity{MemoryMb: 1, DiskMb: 1, Containers: 1}}, time.Minute))
	return w
}

// state is everything a refused call must leave as it was.
type worldState struct {
	lrps   []*modelsv1.ActualLRP
	tasks  []*modelsv1.Task
	cells  []*modelsv1.CellPresence
	latest uint64
}

func (w *cellWorld) state(t *testing.T) worldState {
	t.Helper()
	ctx := testContext(t)
	lrps, err := w.db.ListActualLRPs(ctx, store.ActualLRPFilter{})
	require.NoError(t, err)
	tasks, err := w.db.ListTasks(ctx, store.TaskFilter{})
	require.NoError(t, err)
	cells, err := w.db.ListLiveCells(ctx)
	require.NoError(t, err)
	return worldState{lrps: lrps, tasks: tasks, cells: cells, latest: latest(t, w.db)}
}

// TestCellViewRefusesOthersRows: through the view of cell-1, every lifecycle call on a
// row cell-1 does not hold (or with cell-2's key or cell id) is Unauthorized and
// changes nothing, whatever the state machine alone would allow. On the code before
// cell views, the cross-cell start, crash, evacuations, reject, fail and cancel here
// succeeded.
func TestCellViewRefusesOthersRows(t *testing.T) {
	w := newCellWorld(t)
	c := w.cell1
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"start an instance CLAIMED by another cell", func(ctx context.Context) error {
			_, err := c.StartActualLRP(ctx, lrpKey("app", 0), w.own1, netInfo("10.0.0.1"), store.StartOptions{})
			return err
		}},
		{"start an instance RUNNING on another cell", func(ctx context.Context) error {
			_, err := c.StartActualLRP(ctx, lrpKey("app", 1), w.own1, netInfo("10.0.0.1"), store.StartOptions{})
			return err
		}},
		{"start (create) a missing instance", func(ctx context.Context) error {
			_, err := c.StartActualLRP(ctx, lrpKey("app", 7), w.own1, netInfo("10.0.0.1"), store.StartOptions{})
			return err
		}},
		{"start with another cell's instance key", func(ctx context.Context) error {
			_, err := c.StartActualLRP(ctx, lrpKey("app", 0), w.own2, netInfo("10.0.0.1"), store.StartOptions{})
			return err
		}},
		{"claim an instance CLAIMED by another cell", func(ctx context.Context) error {
			_, err := c.ClaimActualLRP(ctx, "app", 0, w.own1)
			return err
		}},
		{"claim an UNCLAIMED instance for another cell", func(ctx context.Context) error {
			_, err := c.ClaimActualLRP(ctx, "app", 2, w.own2)
			return err
		}},
		{"crash another cell's instance with its key", func(ctx context.Context) error {
			_, err := c.CrashActualLRP(ctx, lrpKey("app", 1), w.own2, "boom")
			return err
		}},
		{"crash another cell's instance with its own key", func(ctx context.Context) error {
			_, err := c.CrashActualLRP(ctx, lrpKey("app", 1), w.own1, "boom")
			return err
		}},
		{"remove another cell's instance with its key", func(ctx context.Context) error {
			_, err := c.RemoveActualLRP(ctx, "app", 1, w.own2)
			return err
		}},
		{"remove an instance without a key", func(ctx context.Context) error {
			_, err := c.RemoveActualLRP(ctx, "app", 2, nil)
			return err
		}},
		{"retire another cell's instance", func(ctx context.Context) error {
			_, err := c.RetireActualLRP(ctx, "app", 1)
			return err
		}},
		{"fail an UNCLAIMED instance", func(ctx context.Context) error {
			_, err := c.FailActualLRP(ctx, lrpKey("app", 2), "no room")
			return err
		}},
		{"evacuate another cell's claimed instance", func(ctx context.Context) error {
			_, err := c.EvacuateClaimedActualLRP(ctx, lrpKey("app", 0), w.own2)
			return err
		}},
		{"evacuate another cell's running instance", func(ctx context.Context) error {
			_, err := c.EvacuateRunningActualLRP(ctx, lrpKey("app", 1), w.own2, netInfo("10.0.0.1"), store.StartOptions{})
			return err
		}},
		{"evacuate-stop another cell's instance", func(ctx context.Context) error {
			_, err := c.EvacuateStoppedActualLRP(ctx, lrpKey("app", 1), w.own2)
			return err
		}},
		{"evacuate-crash another cell's instance", func(ctx context.Context) error {
			_, err := c.EvacuateCrashedActualLRP(ctx, lrpKey("app", 1), w.own2, "boom")
			return err
		}},
		{"remove another cell's evacuating instance", func(ctx context.Context) error {
			_, err := c.RemoveEvacuatingActualLRP(ctx, lrpKey("app", 1), w.own2)
			return err
		}},
		{"start a task RUNNING on another cell", func(ctx context.Context) error {
			_, _, err := c.StartTask(ctx, "t-run", "cell-1")
			return err
		}},
		{"start a PENDING task for another cell", func(ctx context.Context) error {
			_, _, err := c.StartTask(ctx, "t-pend", "cell-2")
			return err
		}},
		{"complete another cell's task as it", func(ctx context.Context) error {
			_, err := c.CompleteTask(ctx, "t-run", "cell-2", false, "", "stolen")
			return err
		}},
		{"complete another cell's task as itself", func(ctx context.Context) error {
			_, err := c.CompleteTask(ctx, "t-run", "cell-1", false, "", "stolen")
			return err
		}},
		{"reject a task RUNNING on another cell", func(ctx context.Context) error {
			_, err := c.RejectTask(ctx, "t-run", "no", 3)
			return err
		}},
		{"reject a PENDING task", func(ctx context.Context) error {
			_, err := c.RejectTask(ctx, "t-pend", "no", 3)
			return err
		}},
		{"fail a task RUNNING on another cell", func(ctx context.Context) error {
			_, err := c.FailTask(ctx, "t-run", "no")
			return err
		}},
		{"cancel a task RUNNING on another cell", func(ctx context.Context) error {
			_, err := c.CancelTask(ctx, "t-run")
			return err
		}},
		{"heartbeat another cell", func(ctx context.Context) error {
			return c.HeartbeatCell(ctx, &modelsv1.CellPresence{CellId: "cell-2", RepAddress: "127.0.0.1:2", Zone: "z9",
				Capacity: &modelsv1.CellCapacity{MemoryMb: 9, DiskMb: 9, Containers: 9}}, time.Minute)
		}},
		{"remove another cell's presence", func(ctx context.Context) error {
			return c.RemoveCell(ctx, "cell-2")
		}},
		{"read a task of another cell", func(ctx context.Context) error {
			_, err := c.GetTask(ctx, "t-run")
			return err
		}},
		{"read a PENDING task", func(ctx context.Context) error {
			_, err := c.GetTask(ctx, "t-pend")
			return err
		}},
		{"read a desired lrp none of whose instances is on the cell", func(ctx context.Context) error {
			_, err := c.GetDesiredLRP(ctx, "app")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.state(t)
			err := tc.call(testContext(t))
			requireErrorType(t, err, models.ErrTypeUnauthorized)
			require.Contains(t, err.Error(), `cell "cell-1" may not`)
			after := w.state(t)
			requireProtosEqual(t, before.lrps, after.lrps)
			requireProtosEqual(t, before.tasks, after.tasks)
			requireProtosEqual(t, before.cells, after.cells)
			require.Equal(t, before.latest, after.latest, "no event")
		})
	}

	t.Run("its lists show only its own cell", func(t *testing.T) {
		ctx := testContext(t)
		lrps, err := c.ListActualLRPs(ctx, store.ActualLRPFilter{CellID: "cell-2"})
		require.NoError(t, err)
		require.Empty(t, lrps)
		tasks, err := c.ListTasks(ctx, store.TaskFilter{})
		require.NoError(t, err)
		require.Empty(t, tasks)
	})
}

// TestCellViewActsForItself walks cell-1 through what a rep does: take the UNCLAIMED
// instance and the PENDING task, read their definitions, run, crash, complete.
func TestCellViewActsForItself(t *testing.T) {
	w := newCellWorld(t)
	c, ctx := w.cell1, testContext(t)

	_, err := c.ClaimActualLRP(ctx, "app", 2, w.own1)
	require.NoError(t, err)
	desired, err := c.GetDesiredLRP(ctx, "app")
	require.NoError(t, err, "its instance is on the cell now")
	require.Equal(t, secretEnvValue, desired.GetEnv()[0].GetValue())
	_, err = c.StartActualLRP(ctx, lrpKey("app", 2), w.own1, netInfo("10.0.0.1"), store.StartOptions{Routable: true})
	require.NoError(t, err)
	lrps, err := c.ListActualLRPs(ctx, store.ActualLRPFilter{})
	require.NoError(t, err)
	require.Len(t, lrps, 1)
	require.Equal(t, "cell-1", lrps[0].GetCellId())
	_, err = c.CrashActualLRP(ctx, lrpKey("app", 2), w.own1, "exited")
	require.NoError(t, err)

	_, shouldStart, err := c.StartTask(ctx, "t-pend", "cell-1")
	require.NoError(t, err)
	require.True(t, shouldStart)
	task, err := c.GetTask(ctx, "t-pend")
	require.NoError(t, err)
	require.Equal(t, "cell-1", task.GetCellId())
	tasks, err := c.ListTasks(ctx, store.TaskFilter{CellID: "cell-2"})
	require.NoError(t, err)
	require.Len(t, tasks, 1, "the filter is forced to its own cell")
	require.Equal(t, "t-pend", tasks[0].GetTaskGuid())
	_, err = c.CompleteTask(ctx, "t-pend", "cell-1", false, "", "done")
	require.NoError(t, err)

	require.NoError(t, c.HeartbeatCell(ctx, &modelsv1.CellPresence{CellId: "cell-1", RepAddress: "127.0.0.1:3", Zone: "z1",
		Capacity: &modelsv1.CellCapacity{MemoryMb: 1, DiskMb: 1, Containers: 1}}, time.Minute))
	require.NoError(t, c.RemoveCell(ctx, "cell-1"))

	t.Run("a task it rejects after starting it", func(t *testing.T) {
		_, err := w.db.DesireTask(ctx, "t-again", "cf-apps", &modelsv1.TaskDefinition{Rootfs: "preloaded:cflinuxfs4",
			Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "vcap"}}}})
		require.NoError(t, err)
		_, _, err = c.StartTask(ctx, "t-again", "cell-1")
		require.NoError(t, err)
		change, err := c.RejectTask(ctx, "t-again", "out of disk", 3)
		require.NoError(t, err)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_PENDING, change.After.GetState())
	})

	t.Run("the trusted store still acts on any row", func(t *testing.T) {
		_, err := w.db.StartActualLRP(ctx, lrpKey("app", 0), w.own1, netInfo("10.0.0.1"), store.StartOptions{})
		require.NoError(t, err, "upstream Diego's rule for trusted callers: CLAIMED → RUNNING with any key")
	})
}

// TestCellViewWithoutCellIDHoldsNothing: a view for an empty cell id (which no
// certificate yields) takes nothing and reads nothing.
func TestCellViewWithoutCellIDHoldsNothing(t *testing.T) {
	w := newCellWorld(t)
	c, ctx := w.db.ForCell(""), testContext(t)
	_, err := c.ClaimActualLRP(ctx, "app", 2, instanceKey("i", ""))
	requireErrorType(t, err, models.ErrTypeUnauthorized)
	_, err = c.GetDesiredLRP(ctx, "app")
	requireErrorType(t, err, models.ErrTypeUnauthorized)
	lrps, err := c.ListActualLRPs(ctx, store.ActualLRPFilter{})
	require.NoError(t, err)
	require.Empty(t, lrps)
	tasks, err := c.ListTasks(ctx, store.TaskFilter{})
	require.NoError(t, err)
	require.Empty(t, tasks)
	_, err = c.RejectTask(ctx, "t-pend", "no", 3)
	requireErrorType(t, err, models.ErrTypeUnauthorized)
}
