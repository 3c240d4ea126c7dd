package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repconfig "drover.dev/rep/config"
)

// TestCellsPlacement runs on three cells (zones z1, z2, z3; cell-2 carries the
// optional placement tag "gpu", so it takes untagged work too): 6 instances land 2 per cell, too much memory and an unknown
// rootfs get placement errors saying why, and placement tags route work to the tagged
// cell only.
func TestCellsPlacement(t *testing.T) {
	cs := newCellStack(t, 3, func(i int, c *repconfig.Config) {
		c.MemoryMB = 2048
		if i == 2 {
			c.OptionalPlacementTags = []string{"gpu"}
		}
	})

	t.Run("spread", func(t *testing.T) {
		const guid = "spread"
		lrp := httpdLRP(guid, 6)
		lrp.CheckDefinition = nil
		lrp.Ports = nil
		lrp.Action = shAction("exec sleep 1000")
		cs.desire(t, lrp)
		running := cs.waitRunning(t, guid, 6)
		perCell := countByCell(runningValues(running))
		require.Equal(t, map[string]int{"cell-1": 2, "cell-2": 2, "cell-3": 2}, perCell)
		cs.removeAndWaitClean(t, guid)
	})

	t.Run("too much memory", func(t *testing.T) {
		const guid = "huge"
		lrp := httpdLRP(guid, 1)
		lrp.MemoryMb = 4096
		cs.desire(t, lrp)
		a := cs.waitActuals(t, guid, runningWait, "a placement error", func(as []*modelsv1.ActualLRP) bool {
			return len(as) == 1 && as[0].GetPlacementError() != ""
		})[0]
		require.Contains(t, a.GetPlacementError(), "memory")
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, a.GetState())
		cs.removeAndWaitClean(t, guid)
	})

	t.Run("unknown rootfs", func(t *testing.T) {
		const guid = "nope"
		lrp := httpdLRP(guid, 1)
		lrp.Rootfs = "preloaded:nope"
		cs.desire(t, lrp)
		a := cs.waitActuals(t, guid, runningWait, "a placement error", func(as []*modelsv1.ActualLRP) bool {
			return len(as) == 1 && as[0].GetPlacementError() != ""
		})[0]
		require.Contains(t, a.GetPlacementError(), "found no compatible cell for required rootfs")
		cs.removeAndWaitClean(t, guid)
	})

	t.Run("placement tags", func(t *testing.T) {
		const guid = "tagged"
		lrp := httpdLRP(guid, 3)
		lrp.CheckDefinition = nil
		lrp.Ports = nil
		lrp.Action = shAction("exec sleep 1000")
		lrp.PlacementTags = []string{"gpu"}
		cs.desire(t, lrp)
		for _, a := range cs.waitRunning(t, guid, 3) {
			require.Equal(t, "cell-2", a.GetCellId(), "index %d", a.GetIndex())
		}
		cs.removeAndWaitClean(t, guid)

		const untagged = "untagged-on-tagged-only"
		lrp = httpdLRP(untagged, 1)
		lrp.PlacementTags = []string{"tpu"}
		cs.desire(t, lrp)
		a := cs.waitActuals(t, untagged, runningWait, "a placement error", func(as []*modelsv1.ActualLRP) bool {
			return len(as) == 1 && as[0].GetPlacementError() != ""
		})[0]
		require.Contains(t, a.GetPlacementError(), `found no compatible cell with placement tag "tpu"`)
		cs.removeAndWaitClean(t, untagged)
	})
}
