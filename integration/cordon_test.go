package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	convergerconfig "drover.dev/converger/config"
	libconfig "drover.dev/lib/config"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestCordon (issue 4, build 5): a cordoned cell takes no new work and keeps what runs
// there. With 2 cells: an LRP placed before the cordon runs one instance on each;
// cordoning cell-1 (ListCells then shows it cordoned, with the reason) leaves that
// instance RUNNING and serving, unchanged, while both instances of a new LRP land on
// cell-2. After the uncordon, scaling the new LRP up places work on cell-1 again.
func TestCordon(t *testing.T) {
	cs := newCellStack(t, 2, nil)
	cordoned, open := cs.Reps[0], cs.Reps[1]

	const early = "placed-before-cordon"
	cs.desire(t, httpdLRP(early, 2))
	before := runningValues(cs.waitRunning(t, early, 2))
	require.Equal(t, map[string]int{cordoned.CellID(): 1, open.CellID(): 1}, countByCell(before), "placement spreads the instances")

	const reason = "kernel upgrade"
	_, err := cs.bbs.CordonCell(callCtx(t), &bbsv1.CordonCellRequest{CellId: cordoned.CellID(), Reason: reason})
	require.NoError(t, err)
	cells := cs.liveCells(t)
	require.Contains(t, cells, cordoned.CellID())
	require.True(t, cells[cordoned.CellID()].GetCordoned(), "ListCells shows %s cordoned", cordoned.CellID())
	require.Equal(t, reason, cells[cordoned.CellID()].GetCordonReason())
	require.False(t, cells[open.CellID()].GetCordoned(), "ListCells shows %s not cordoned", open.CellID())

	const late = "placed-while-cordoned"
	cs.desire(t, httpdLRP(late, 2))
	for _, a := range cs.waitRunning(t, late, 2) {
		require.Equal(t, open.CellID(), a.GetCellId(), "index %d of %s placed while %s is cordoned", a.GetIndex(), late, cordoned.CellID())
	}

	// What ran on the cordoned cell is untouched: the same instances, still RUNNING and serving.
	now := cs.waitRunning(t, early, 2)
	for _, a := range before {
		got := now[a.GetIndex()]
		require.NotNil(t, got, "index %d of %s", a.GetIndex(), early)
		require.Equal(t, a.GetInstanceGuid(), got.GetInstanceGuid(), "index %d of %s keeps its instance", a.GetIndex(), early)
		require.Equal(t, a.GetCellId(), got.GetCellId(), "index %d of %s keeps its cell", a.GetIndex(), early)
		requireServesIndex(t, got)
	}

	resp, err := cs.bbs.UncordonCell(callCtx(t), &bbsv1.UncordonCellRequest{CellId: cordoned.CellID()})
	require.NoError(t, err)
	require.True(t, resp.GetWasCordoned())
	cells = cs.liveCells(t)
	require.False(t, cells[cordoned.CellID()].GetCordoned(), "ListCells shows %s uncordoned", cordoned.CellID())
	require.Empty(t, cells[cordoned.CellID()].GetCordonReason())

	instances := int32(4)
	_, err = cs.bbs.UpdateDesiredLRP(callCtx(t), &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: late, Update: &modelsv1.DesiredLRPUpdate{Instances: &instances}})
	require.NoError(t, err)
	scaled := runningValues(cs.waitRunning(t, late, int(instances)))
	require.NotZero(t, countByCell(scaled)[cordoned.CellID()], "after the uncordon %s gets new work; %s:\n%s", cordoned.CellID(), late, describeActuals(scaled))

	_, err = cs.bbs.RemoveDesiredLRP(callCtx(t), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: early})
	require.NoError(t, err)
	cs.waitActuals(t, early, settleWait, "all instances gone", func(as []*modelsv1.ActualLRP) bool { return len(as) == 0 })
	cs.removeAndWaitClean(t, late)
}

// TestCordonOnlyCellThenUncordon (issue 17, build 5): with the only cell cordoned, a new
// LRP's instance and a new task cannot be placed, and their placement error says why,
// naming the cell and the cordon's reason (a task, rejected max_task_retries times,
// fails with it). Uncordoning the cell places the instance at once: the converger here
// re-auctions stale UNCLAIMED rows only after 10 minutes, far beyond the wait, so only
// the BBS's re-auction on uncordon can run it.
func TestCordonOnlyCellThenUncordon(t *testing.T) {
	const slow = 10 * time.Minute
	cs := newConvergeStack(t, convergeOptions{cells: 1, configureConverger: func(c *convergerconfig.Config) {
		c.StaleUnclaimedDuration = libconfig.Duration(slow)
		c.RepeatInterval = libconfig.Duration(slow)
	}})
	cell := cs.Reps[0].CellID()
	const reason = "disk replacement"
	_, err := cs.bbs.CordonCell(callCtx(t), &bbsv1.CordonCellRequest{CellId: cell, Reason: reason})
	require.NoError(t, err)
	want := fmt.Sprintf("all compatible cells are cordoned: %s (%s)", cell, reason)

	const guid = "desired-while-cordoned"
	cs.desire(t, httpdLRP(guid, 1))
	cs.waitActuals(t, guid, settleWait, "the placement error names the cordon", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 1 && as[0].GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED && as[0].GetPlacementError() == want
	})
	const task = "task-while-cordoned"
	cs.desireTask(t, task, &modelsv1.TaskDefinition{Action: shAction(`echo done > /tmp/result`), ResultFile: "/tmp/result"})
	failed := cs.waitTaskCompleted(t, task)
	require.True(t, failed.GetFailed())
	require.Equal(t, want, failed.GetFailureReason())
	require.Equal(t, want, failed.GetRejectionReason())

	resp, err := cs.bbs.UncordonCell(callCtx(t), &bbsv1.UncordonCellRequest{CellId: cell})
	require.NoError(t, err)
	require.True(t, resp.GetWasCordoned())

	running := cs.waitRunning(t, guid, 1)
	require.Equal(t, cell, running[0].GetCellId())
	require.Empty(t, running[0].GetPlacementError())
	requireServesIndex(t, running[0])

	cs.removeAndWaitClean(t, guid)
}
