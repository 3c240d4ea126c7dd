package auction

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// simCell is a simulation cell as upstream's harness makes them: 100 MB memory, 100 MB
// disk, 100 containers, preloaded:cflinuxfs4 and docker.
func simCell(id, zone string) CellState {
	capacity := Resources{MemoryMB: 100, DiskMB: 100, Containers: 100}
	return CellState{
		CellID:    id,
		Zone:      zone,
		Available: capacity,
		Total:     capacity,
		RootFSProviders: []RootFSProvider{
			{Name: "preloaded", Properties: []string{"cflinuxfs4"}},
			{Name: "docker"},
		},
	}
}

// simCells makes n simulation cells alternating between zones Z0 and Z1.
func simCells(n int) []CellState {
	cells := make([]CellState, n)
	for i := range cells {
		cells[i] = simCell(fmt.Sprintf("cell-%03d", i), fmt.Sprintf("Z%d", i%2))
		cells[i].Index = i
	}
	return cells
}

// preload puts n 1 MB instances of other apps on the cell.
func preload(c *CellState, n int) {
	for i := range n {
		c.LRPs = append(c.LRPs, Instance{ProcessGuid: fmt.Sprintf("%s-existing-%d", c.CellID, i)})
	}
	c.Available.MemoryMB -= n
	c.Available.DiskMB -= n
	c.Available.Containers -= n
}

// lrp is one instance on preloaded:cflinuxfs4 with memory and disk of mb.
func lrp(guid string, index int32, mb int) LRPAuction {
	return LRPAuction{
		ProcessGuid: guid,
		Index:       index,
		Domain:      "domain",
		Resource:    Resource{MemoryMB: mb, DiskMB: mb},
		Constraint:  Constraint{RootFS: "preloaded:cflinuxfs4"},
	}
}

// appInstances is indices 0..n-1 of one app.
func appInstances(guid string, n, mb int) []LRPAuction {
	lrps := make([]LRPAuction, n)
	for i := range lrps {
		lrps[i] = lrp(guid, int32(i), mb)
	}
	return lrps
}

// uniqueApps is index 0 of n different apps.
func uniqueApps(n, mb int) []LRPAuction {
	lrps := make([]LRPAuction, n)
	for i := range lrps {
		lrps[i] = lrp(fmt.Sprintf("app-%d", i), 0, mb)
	}
	return lrps
}

// task is one task on preloaded:cflinuxfs4 with memory and disk of mb.
func task(guid string, mb int) TaskAuction {
	return TaskAuction{
		TaskGuid:   guid,
		Domain:     "domain",
		Resource:   Resource{MemoryMB: mb, DiskMB: mb},
		Constraint: Constraint{RootFS: "preloaded:cflinuxfs4"},
	}
}

// placedCounts counts the LRPs and tasks placed per cell id.
func placedCounts(r Result) map[string]int {
	counts := map[string]int{}
	for _, w := range r.Work {
		counts[w.CellID] += len(w.LRPs) + len(w.Tasks)
	}
	return counts
}

// placedOn returns the cell each LRP instance and task was placed on.
func placedOn(r Result) map[string]string {
	where := map[string]string{}
	for _, w := range r.Work {
		for _, l := range w.LRPs {
			where[fmt.Sprintf("%s.%d", l.ProcessGuid, l.Index)] = w.CellID
		}
		for _, t := range w.Tasks {
			where[t.TaskGuid] = w.CellID
		}
	}
	return where
}

// requireSpread fails unless every cell's count is within tolerance of want.
func requireSpread(t *testing.T, cells []CellState, counts map[string]int, want float64, tolerance float64) {
	t.Helper()
	for _, c := range cells {
		got := float64(counts[c.CellID])
		require.InDeltaf(t, want, got, tolerance, "cell %s holds %v, want %v±%v (all: %v)", c.CellID, got, want, tolerance, counts)
	}
}

// failureMessages lists the placement errors of a result, LRPs then tasks.
func failureMessages(r Result) []string {
	var msgs []string
	for _, f := range r.FailedLRPs {
		msgs = append(msgs, f.PlacementError)
	}
	for _, f := range r.FailedTasks {
		msgs = append(msgs, f.PlacementError)
	}
	return msgs
}
