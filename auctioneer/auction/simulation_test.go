package auction

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The scenarios of upstream's auction simulation suite (reference/cell.md §1.10): cells
// of 100 MB memory, 100 MB disk and 100 containers in two zones.

func TestSimulationColdStartSpreadsEvenly(t *testing.T) {
	for _, tt := range []struct{ instances, cells int }{{8, 4}, {40, 10}, {200, 20}, {800, 40}} {
		mean := float64(tt.instances) / float64(tt.cells)
		t.Run(fmt.Sprintf("%d unique apps on %d cells", tt.instances, tt.cells), func(t *testing.T) {
			cells := simCells(tt.cells)
			result := Place(cells, uniqueApps(tt.instances, 1), nil, defaultOptions)
			require.Empty(t, result.FailedLRPs)
			requireSpread(t, cells, placedCounts(result), mean, 1)
		})
		t.Run(fmt.Sprintf("%d instances of one app on %d cells", tt.instances, tt.cells), func(t *testing.T) {
			cells := simCells(tt.cells)
			result := Place(cells, appInstances("app", tt.instances, 1), nil, defaultOptions)
			require.Empty(t, result.FailedLRPs)
			requireSpread(t, cells, placedCounts(result), mean, 1)
		})
	}
}

func TestSimulationLargeColdStart(t *testing.T) {
	for _, tt := range []struct{ instances, cells int }{{2050, 25}, {8200, 100}} {
		t.Run(fmt.Sprintf("%d instances on %d cells", tt.instances, tt.cells), func(t *testing.T) {
			cells := simCells(tt.cells)
			var lrps []LRPAuction
			for app := 0; len(lrps) < tt.instances; app++ {
				n := min(41, tt.instances-len(lrps))
				lrps = append(lrps, appInstances(fmt.Sprintf("app-%d", app), n, 1)...)
			}
			result := Place(cells, lrps, nil, defaultOptions)
			require.Empty(t, result.FailedLRPs)
			requireSpread(t, cells, placedCounts(result), float64(tt.instances)/float64(tt.cells), 10)
		})
	}
}

func TestSimulationBouldersBeforePebbles(t *testing.T) {
	cells := []CellState{simCell("only", "Z0")}
	lrps := append(uniqueApps(80, 1), appInstances("boulder", 2, 50)...)
	result := Place(cells, lrps, nil, defaultOptions)
	require.Equal(t, 51, placedCounts(result)["only"])
	require.Len(t, result.FailedLRPs, 31)
	where := placedOn(result)
	require.Equal(t, "only", where["boulder.0"], "the first boulder wins")
	require.NotContains(t, where, "boulder.1", "its second index loses")
}

func TestSimulationAZDistribution(t *testing.T) {
	cells := []CellState{simCell("z0-a", "Z0"), simCell("z0-b", "Z0"), simCell("z1-a", "Z1")}
	preload(&cells[2], 50)
	result := Place(cells, appInstances("app", 40, 1), nil, defaultOptions)
	require.Empty(t, result.FailedLRPs)
	counts := placedCounts(result)
	require.Equal(t, 20, counts["z0-a"]+counts["z0-b"])
	require.Equal(t, 20, counts["z1-a"])
}

func TestSimulationImbalancedDeploy(t *testing.T) {
	for _, tt := range []struct{ halfFull, instances int }{{95, 500}, {99, 100}} {
		t.Run(fmt.Sprintf("%d of 100 half full, %d instances", tt.halfFull, tt.instances), func(t *testing.T) {
			cells := simCells(100)
			for i := range tt.halfFull {
				preload(&cells[i], 50)
			}
			result := Place(cells, appInstances("app", tt.instances, 1), nil, defaultOptions)
			require.Empty(t, result.FailedLRPs)
			requireSpread(t, cells, placedCounts(result), float64(tt.instances)/100, 1)
		})
	}
}

func TestSimulationWattersDemo(t *testing.T) {
	for _, tt := range []struct{ cells, instances int }{{10, 80}, {30, 200}, {100, 400}} {
		t.Run(fmt.Sprintf("%d instances on %d busy cells", tt.instances, tt.cells), func(t *testing.T) {
			cells := simCells(tt.cells)
			for i := range cells {
				preload(&cells[i], 78+i%3)
			}
			result := Place(cells, appInstances("app", tt.instances, 1), nil, defaultOptions)
			require.Empty(t, result.FailedLRPs)
			requireSpread(t, cells, placedCounts(result), float64(tt.instances)/float64(tt.cells), 1)
		})
	}
}

func TestSimulationPlacementTagsRouteWork(t *testing.T) {
	cells := simCells(6)
	for i := range 3 {
		cells[i].PlacementTags = []string{"segment-a"}
	}
	tagged := appInstances("isolated", 9, 1)
	for i := range tagged {
		tagged[i].Constraint.PlacementTags = []string{"segment-a"}
	}
	result := Place(cells, append(tagged, appInstances("shared", 9, 1)...), nil, defaultOptions)
	require.Empty(t, result.FailedLRPs)
	for key, cellID := range placedOn(result) {
		isolatedCell := cellID <= "cell-002"
		require.Equal(t, key[:len("isolated")] == "isolated", isolatedCell, "%s on %s", key, cellID)
	}
}

// BenchmarkPlace10kOn200 places 10,000 instances (100 apps of 100, 256–1024 MB) on 200
// cells of 32 GB in 2 zones, and reports placements per second.
func BenchmarkPlace10kOn200(b *testing.B) {
	cells := make([]CellState, 200)
	for i := range cells {
		capacity := Resources{MemoryMB: 32 * 1024, DiskMB: 64 * 1024, Containers: 256}
		cells[i] = CellState{
			CellID: fmt.Sprintf("cell-%03d", i), Zone: fmt.Sprintf("Z%d", i%2), Index: i,
			Available: capacity, Total: capacity,
			RootFSProviders: []RootFSProvider{{Name: "preloaded", Properties: []string{"cflinuxfs4"}}},
		}
	}
	var lrps []LRPAuction
	for app := range 100 {
		lrps = append(lrps, appInstances(fmt.Sprintf("app-%d", app), 100, 256<<(app%3))...)
	}
	placed := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		result := Place(cells, lrps, nil, defaultOptions)
		placed += len(lrps) - len(result.FailedLRPs)
	}
	if placed == 0 {
		b.Fatal("nothing placed")
	}
	b.ReportMetric(float64(placed)/b.Elapsed().Seconds(), "placements/s")
}
