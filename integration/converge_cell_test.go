package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/devstacktest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestConvergeKilledCell (issue 4, acceptance 2): with 2 cells, kill -9 the rep of a cell
// that runs some of 4 instances. Once its presence expires its instances turn SUSPECT
// and stay RUNNING with their addresses (routable) while replacements are auctioned to
// the other cell; within cell TTL + one interval + start time the replacements run, the
// suspects are gone, and the BBS holds exactly 4 RUNNING ORDINARY instances. The dead
// rep's containers keep running in containerd until the stack's cleanup (CleanCells).
func TestConvergeKilledCell(t *testing.T) {
	cs := newConvergeStack(t, convergeOptions{cells: 2, configureRep: fastPresence})
	const guid = "survive-cell-loss"
	const instances = 4
	cs.desire(t, httpdLRP(guid, instances))
	before := cs.waitRunning(t, guid, instances)
	perCell := countByCell(runningValues(before))
	require.Len(t, perCell, 2, "the instances spread over both cells: %v", perCell)

	victim, survivor := cs.Reps[0], cs.Reps[1]
	lost := perCell[victim.CellID()]
	require.NoError(t, victim.Kill(ctxFor(t, settleWait)))
	killed := time.Now()

	// start time: the auction, the container, the first health check.
	const startTime = 30 * time.Second
	wait := fastPresenceTTL + devstacktest.ConvergeInterval + startTime
	suspects := map[int32]bool{}
	final := cs.waitActuals(t, guid, wait, "replacements RUNNING on the surviving cell, no suspects", func(as []*modelsv1.ActualLRP) bool {
		for _, a := range withPresence(as, modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT) {
			suspects[a.GetIndex()] = true
			// A suspect stays routable: RUNNING on the lost cell with its address.
			require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, a.GetState(), "suspect index %d", a.GetIndex())
			require.Equal(t, victim.CellID(), a.GetCellId(), "suspect index %d", a.GetIndex())
			require.NotEmpty(t, a.GetNetInfo().GetAddress(), "suspect index %d keeps its address", a.GetIndex())
			require.NotEmpty(t, a.GetNetInfo().GetPorts(), "suspect index %d keeps its ports", a.GetIndex())
		}
		for _, a := range as {
			if a.GetCellId() != survivor.CellID() {
				return false
			}
		}
		return len(as) == instances && ordinaryRunning(as) == instances
	})
	t.Logf("replaced %d instances of the killed cell in %s", lost, time.Since(killed).Round(time.Millisecond))
	require.Len(t, suspects, lost, "every instance of the killed cell was SUSPECT while its replacement started")
	for _, a := range final {
		requireServesIndex(t, a)
	}
}
