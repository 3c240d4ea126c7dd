package auction

import (
	"fmt"
	"testing"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

// cordoned marks a cell cordoned with reason.
func cordoned(c CellState, reason string) CellState {
	c.Cordoned, c.CordonReason = true, reason
	return c
}

func TestPlaceCordonedCells(t *testing.T) {
	cellA, cellB := simCell("cell-1", "Z0"), simCell("cell-2", "Z1")
	tagged := lrp("app", 0, 1)
	tagged.Constraint.PlacementTags = []string{"gpu"}
	big := lrp("app", 0, 0)
	big.Resource = Resource{MemoryMB: 500, DiskMB: 1}
	many := make([]CellState, 7)
	for i := range many {
		many[i] = cordoned(simCell(fmt.Sprintf("cell-%d", 7-i), "Z0"), "")
	}
	many[6].CordonReason = "r"

	tests := []struct {
		name  string
		cells []CellState
		lrp   LRPAuction
		want  string // "" = placed on cell-2
	}{
		{"the only cell is cordoned", []CellState{cordoned(cellA, "kernel upgrade")}, lrp("app", 0, 1),
			"all compatible cells are cordoned: cell-1 (kernel upgrade)"},
		{"every cell cordoned, sorted by id, empty reason unnamed",
			[]CellState{cordoned(cellB, ""), cordoned(cellA, "disk swap")}, lrp("app", 0, 1),
			"all compatible cells are cordoned: cell-1 (disk swap), cell-2"},
		{"the compatible cell is cordoned, the other is incompatible",
			[]CellState{cordoned(withTags(cellA, nil, []string{"gpu"}), "maintenance"), cellB}, tagged,
			"all compatible cells are cordoned: cell-1 (maintenance)"},
		{"an uncordoned cell takes the work", []CellState{cordoned(cellA, "x"), cellB}, lrp("app", 0, 1), ""},
		{"cordoned but incompatible: the filter error stays",
			[]CellState{cordoned(cellA, "x"), cellB}, tagged, `found no compatible cell with placement tag "gpu"`},
		{"only cordoned and incompatible cells: the filter error",
			[]CellState{cordoned(cellA, "x")}, tagged, `found no compatible cell with placement tag "gpu"`},
		{"uncordoned cells short of memory name the cordoned ones",
			[]CellState{cordoned(cellA, "x"), withCapacity(cellB, Resources{100, 100, 10})}, big,
			"insufficient resources: memory (needs 500 MB, largest free 100 MB); compatible cells cordoned: cell-1 (x)"},
		{"at most five cells are named", many, lrp("app", 0, 1),
			"all compatible cells are cordoned: cell-1 (r), cell-2, cell-3, cell-4, cell-5, and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result := Place(tt.cells, []LRPAuction{tt.lrp}, nil, defaultOptions)
			if tt.want == "" {
				require.Empty(t, result.FailedLRPs)
				require.Len(t, result.Work, 1)
				require.Equal(t, "cell-2", result.Work[0].CellID, "never placed on a cordoned cell")
				return
			}
			require.Empty(t, result.Work, "nothing is placed on a cordoned cell")
			require.Equal(t, []string{tt.want}, failureMessages(result))

			taskResult := Place(tt.cells, nil, []TaskAuction{{TaskGuid: "t", Resource: tt.lrp.Resource, Constraint: tt.lrp.Constraint}}, defaultOptions)
			require.Empty(t, taskResult.Work)
			require.Equal(t, []string{tt.want}, failureMessages(taskResult), "tasks fail the same way")
		})
	}
}

func TestPlaceCordonedCellsDoNotChangeScoring(t *testing.T) {
	cells := simCells(3)
	withCordon := append(cells[:2:2], cordoned(cells[2], "x"))
	lrps := appInstances("app", 4, 1)
	require.Equal(t, Place(cells[:2], lrps, nil, defaultOptions), Place(withCordon, lrps, nil, defaultOptions))
}

func TestCellFromPresenceKeepsTheCordon(t *testing.T) {
	c := CellFromPresence(presenceFixture(), 3)
	require.True(t, c.Cordoned)
	require.Equal(t, "kernel upgrade", c.CordonReason)
	require.Equal(t, "cell-1", c.CellID)
	require.Equal(t, "z1", c.Zone)
	require.Equal(t, 3, c.Index)
	require.Equal(t, []RootFSProvider{{Name: "preloaded", Properties: []string{"busybox"}}}, c.RootFSProviders)
	require.Equal(t, []string{"a"}, c.PlacementTags)
	require.Equal(t, []string{"b"}, c.OptionalPlacementTags)
	require.Equal(t, Resources{MemoryMB: 1024, DiskMB: 2048, Containers: 10}, c.Total)
}

func presenceFixture() *modelsv1.CellPresence {
	return &modelsv1.CellPresence{
		CellId:                "cell-1",
		Zone:                  "z1",
		Capacity:              &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 2048, Containers: 10},
		RootfsProviders:       []*modelsv1.RootFSProvider{{Name: "preloaded", Properties: []string{"busybox"}}},
		PlacementTags:         []string{"a"},
		OptionalPlacementTags: []string{"b"},
		Cordoned:              true,
		CordonReason:          "kernel upgrade",
	}
}
