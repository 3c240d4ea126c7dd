package auction

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

var defaultOptions = Options{StartingContainerWeight: 0.25}

func withTags(c CellState, required, optional []string) CellState {
	c.PlacementTags, c.OptionalPlacementTags = required, optional
	return c
}

func withCapacity(c CellState, r Resources) CellState {
	c.Available, c.Total = r, r
	return c
}

func TestPlaceFailureStrings(t *testing.T) {
	tagged := func(tags ...string) LRPAuction {
		l := lrp("app", 0, 1)
		l.Constraint.PlacementTags = tags
		return l
	}
	rootfs := func(url string) LRPAuction {
		l := lrp("app", 0, 1)
		l.Constraint.RootFS = url
		return l
	}
	sized := func(mem, disk int) LRPAuction {
		l := lrp("app", 0, 0)
		l.Resource = Resource{MemoryMB: mem, DiskMB: disk}
		return l
	}
	drivers := lrp("app", 0, 1)
	drivers.Constraint.VolumeDrivers = []string{"nfs"}
	cellA, cellB := simCell("a", "Z0"), simCell("b", "Z1")

	tests := []struct {
		name  string
		cells []CellState
		lrp   LRPAuction
		want  string // "" = placed
	}{
		{"preloaded stack present", []CellState{cellA}, rootfs("preloaded:cflinuxfs4"), ""},
		{"preloaded stack absent", []CellState{cellA, cellB}, rootfs("preloaded:nope"), ErrRootFSMismatch},
		{"preloaded+layer uses the preloaded stacks", []CellState{cellA}, rootfs("preloaded+layer:cflinuxfs4?layer=http://x/y.tgz"), ""},
		{"docker is arbitrary", []CellState{cellA}, rootfs("docker:///busybox#latest"), ""},
		{"unknown scheme", []CellState{cellA}, rootfs("oci://busybox"), ErrRootFSMismatch},
		{"not a URL", []CellState{cellA}, rootfs("cflinuxfs4"), ErrRootFSMismatch},
		{"missing volume driver", []CellState{cellA}, drivers, ErrVolumeDriverMismatch},
		{"volume driver present", []CellState{func() CellState { c := cellA; c.VolumeDrivers = []string{"nfs", "smb"}; return c }()}, drivers, ""},
		{"one tag, untagged cells", []CellState{cellA, cellB}, tagged("x"), `found no compatible cell with placement tag "x"`},
		{"three tags", []CellState{cellA}, tagged("a", "b", "c"), `found no compatible cell with placement tags "a", "b" and "c"`},
		{"two tags", []CellState{cellA}, tagged("a", "b"), `found no compatible cell with placement tags "a" and "b"`},
		{"no tags, every cell requires one", []CellState{withTags(cellA, []string{"x"}, nil)}, tagged(), "found no compatible cell with no placement tags"},
		{"required tag requested", []CellState{withTags(cellA, []string{"x"}, nil)}, tagged("x"), ""},
		{"optional tag requested", []CellState{withTags(cellA, nil, []string{"x"})}, tagged("x"), ""},
		{"optional tag not requested", []CellState{withTags(cellA, nil, []string{"x"})}, tagged(), ""},
		{"required and optional requested", []CellState{withTags(cellA, []string{"x"}, []string{"y"})}, tagged("x", "y"), ""},
		{"only the optional tag requested", []CellState{withTags(cellA, []string{"x"}, []string{"y"})}, tagged("y"), `found no compatible cell with placement tag "y"`},
		{"a tag the cell does not have", []CellState{withTags(cellA, []string{"x"}, nil)}, tagged("x", "z"), `found no compatible cell with placement tags "x" and "z"`},
		{"furthest stage wins across zones", []CellState{cellA, withTags(func() CellState { c := cellB; c.VolumeDrivers = []string{"nfs"}; return c }(), []string{"q"}, nil)},
			func() LRPAuction { l := drivers; l.Constraint.PlacementTags = []string{"x"}; return l }(), `found no compatible cell with placement tag "x"`},
		{"memory short everywhere", []CellState{withCapacity(cellA, Resources{4000, 100000, 100}), withCapacity(cellB, Resources{2000, 100000, 100})}, sized(8192, 1),
			"insufficient resources: memory (needs 8192 MB, largest free 4000 MB)"},
		{"disk and memory short", []CellState{cellA, cellB}, sized(200, 300),
			"insufficient resources: disk, memory (disk: needs 300 MB, largest free 100 MB; memory: needs 200 MB, largest free 100 MB)"},
		{"containers full", []CellState{withCapacity(cellA, Resources{100, 100, 0})}, sized(1, 1),
			"insufficient resources: containers (needs 1 container, largest free 0)"},
		{"no common shortfall", []CellState{withCapacity(cellA, Resources{10, 1000, 10}), withCapacity(cellB, Resources{1000, 10, 10})}, sized(100, 100),
			"insufficient resources"},
		{"incompatible cells do not count towards shortfalls", []CellState{withCapacity(cellA, Resources{10, 1000, 10}), withTags(withCapacity(cellB, Resources{1000, 10, 10}), []string{"x"}, nil)}, sized(100, 1),
			"insufficient resources: memory (needs 100 MB, largest free 10 MB)"},
		{"no cells", nil, lrp("app", 0, 1), ErrCellCommunication},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result := Place(tt.cells, []LRPAuction{tt.lrp}, nil, defaultOptions)
			if tt.want == "" {
				require.Empty(t, result.FailedLRPs)
				require.Len(t, result.Work, 1)
				return
			}
			require.Empty(t, result.Work)
			require.Equal(t, []string{tt.want}, failureMessages(result))

			taskResult := Place(tt.cells, nil, []TaskAuction{{TaskGuid: "t", Resource: tt.lrp.Resource, Constraint: tt.lrp.Constraint}}, defaultOptions)
			require.Equal(t, []string{tt.want}, failureMessages(taskResult), "tasks fail the same way")
		})
	}
}

func TestPlaceInFlightLimit(t *testing.T) {
	cells := simCells(2)
	cells[0].StartingContainerCount = 1
	result := Place(cells, appInstances("app", 3, 1), []TaskAuction{task("t", 1)},
		Options{StartingContainerWeight: 0.25, StartingContainerCountMaximum: 3})
	// 1 already starting: app.0 and the task are placed, then the cap is reached.
	require.Equal(t, map[string]string{"app.0": "cell-001", "t": "cell-000"}, placedOn(result))
	require.Equal(t, []string{ErrInFlightLimit, ErrInFlightLimit}, failureMessages(result))
}

func TestPlaceOrderAndScoring(t *testing.T) {
	t.Run("index 0 of every app, then tasks, then other indices", func(t *testing.T) {
		cell := withCapacity(simCell("only", "Z0"), Resources{MemoryMB: 100, DiskMB: 100, Containers: 3})
		lrps := append(appInstances("a", 2, 1), appInstances("b", 2, 1)...)
		result := Place([]CellState{cell}, lrps, []TaskAuction{task("t", 1)}, defaultOptions)
		require.ElementsMatch(t, []string{"a.0", "b.0", "t"}, keys(placedOn(result)))
		require.Len(t, result.FailedLRPs, 2)
		for _, f := range result.FailedLRPs {
			require.Equal(t, int32(1), f.Index)
			require.Equal(t, "insufficient resources: containers (needs 1 container, largest free 0)", f.PlacementError)
		}
	})
	t.Run("biggest first within an index", func(t *testing.T) {
		cell := simCell("only", "Z0")
		result := Place([]CellState{cell}, []LRPAuction{lrp("small", 0, 40), lrp("big", 0, 70)}, nil, defaultOptions)
		require.Equal(t, map[string]string{"big.0": "only"}, placedOn(result))
		require.Equal(t, "small", result.FailedLRPs[0].ProcessGuid)
	})
	t.Run("tasks biggest first", func(t *testing.T) {
		cell := simCell("only", "Z0")
		result := Place([]CellState{cell}, nil, []TaskAuction{task("small", 40), task("big", 70)}, defaultOptions)
		require.Equal(t, map[string]string{"big": "only"}, placedOn(result))
	})
	t.Run("locality beats load", func(t *testing.T) {
		cells := simCells(2)
		preload(&cells[1], 60)
		cells[0].LRPs = append(cells[0].LRPs, Instance{ProcessGuid: "app", Index: 0})
		result := Place(cells, []LRPAuction{lrp("app", 1, 1)}, nil, defaultOptions)
		require.Equal(t, map[string]string{"app.1": "cell-001"}, placedOn(result))
	})
	t.Run("least used cell wins", func(t *testing.T) {
		cells := simCells(3)
		preload(&cells[0], 10)
		preload(&cells[2], 5)
		result := Place(cells, []LRPAuction{lrp("app", 0, 1)}, nil, defaultOptions)
		require.Equal(t, map[string]string{"app.0": "cell-001"}, placedOn(result))
	})
	t.Run("starting containers weigh", func(t *testing.T) {
		cells := simCells(2)
		cells[0].StartingContainerCount = 1
		preload(&cells[1], 20) // 0.2 used < 0.25 for one starting container
		result := Place(cells, []LRPAuction{lrp("app", 0, 1)}, nil, defaultOptions)
		require.Equal(t, map[string]string{"app.0": "cell-001"}, placedOn(result))
	})
	t.Run("tasks spread by task count", func(t *testing.T) {
		cells := simCells(2)
		cells[0].Tasks = []string{"existing"}
		preload(&cells[1], 50)
		result := Place(cells, nil, []TaskAuction{task("t1", 1), task("t2", 1)}, defaultOptions)
		require.Equal(t, map[string]string{"t1": "cell-001", "t2": "cell-000"}, placedOn(result))
	})
	t.Run("placements see earlier placements", func(t *testing.T) {
		cells := simCells(2)
		result := Place(cells, []LRPAuction{lrp("a", 0, 60), lrp("b", 0, 60), lrp("c", 0, 60)}, nil, defaultOptions)
		require.Equal(t, map[string]int{"cell-000": 1, "cell-001": 1}, placedCounts(result))
		require.Equal(t, []string{"insufficient resources: disk, memory (disk: needs 60 MB, largest free 40 MB; memory: needs 60 MB, largest free 40 MB)"}, failureMessages(result))
	})
	t.Run("inputs are not modified", func(t *testing.T) {
		cells := simCells(2)
		lrps := []LRPAuction{lrp("small", 0, 1), lrp("big", 0, 50)}
		before := fmt.Sprint(cells, lrps)
		Place(cells, lrps, nil, defaultOptions)
		require.Equal(t, before, fmt.Sprint(cells, lrps))
	})
	t.Run("bin pack first fit fills low indices first", func(t *testing.T) {
		for _, weight := range []float64{0.25, 0.5, 0.75} {
			cells := simCells(6)
			result := Place(cells, uniqueApps(30, 1), nil, Options{StartingContainerWeight: 0.25, BinPackFirstFitWeight: weight})
			counts := placedCounts(result)
			for zone := range 2 {
				for i := zone; i+2 < len(cells); i += 2 {
					require.GreaterOrEqualf(t, counts[cells[i].CellID], counts[cells[i+2].CellID], "weight %v: %v", weight, counts)
				}
			}
			zoneTotals := [2]int{}
			for i, c := range cells {
				zoneTotals[i%2] += counts[c.CellID]
			}
			require.InDelta(t, zoneTotals[0], zoneTotals[1], 1, "zones balanced")
			require.Greater(t, counts["cell-000"], counts["cell-004"], "weight %v packs", weight)
		}
	})
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
