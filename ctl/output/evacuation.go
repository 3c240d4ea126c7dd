package output

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// InstanceCount is how many ActualLRPs have one presence and state.
type InstanceCount struct {
	Presence string `json:"presence"`
	State    string `json:"state"`
	Count    int    `json:"count"`
	// label is the state as tables show it ("RUNNING (EVACUATING)").
	label string
	// presence and state order the counts.
	presence modelsv1.ActualLRPPresence
	state    modelsv1.ActualLRPState
}

// CountInstances groups ActualLRPs by presence and state, ordered by presence
// (ordinary first), then state.
func CountInstances(lrps []*modelsv1.ActualLRP) []InstanceCount {
	var out []InstanceCount
	for _, a := range lrps {
		presence := a.GetPresence()
		if presence == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED {
			presence = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY
		}
		i := slices.IndexFunc(out, func(c InstanceCount) bool { return c.presence == presence && c.state == a.GetState() })
		if i < 0 {
			out = append(out, InstanceCount{
				Presence: models.PresenceName(presence), State: models.StateName(a.GetState()),
				label: ActualLRPStateLabel(a), presence: presence, state: a.GetState(),
			})
			i = len(out) - 1
		}
		out[i].Count++
	}
	slices.SortFunc(out, func(a, b InstanceCount) int {
		return cmp.Or(cmp.Compare(a.presence, b.presence), cmp.Compare(a.state, b.state))
	})
	return out
}

// EvacuationProgress is one report while waiting for a cell to finish evacuating.
type EvacuationProgress struct {
	CellID string `json:"cell_id"`
	// Elapsed is the time since the evacuation was requested, in whole seconds.
	ElapsedSeconds int64 `json:"elapsed_seconds"`
	// Instances counts the cell's ActualLRPs by presence and state.
	Instances []InstanceCount `json:"instances"`
	// Done is set once the cell's presence is gone.
	Done bool `json:"done"`
}

// NewEvacuationProgress builds a report from the cell's ActualLRPs.
func NewEvacuationProgress(cellID string, elapsed time.Duration, lrps []*modelsv1.ActualLRP) EvacuationProgress {
	instances := CountInstances(lrps)
	if instances == nil {
		instances = []InstanceCount{}
	}
	return EvacuationProgress{CellID: cellID, ElapsedSeconds: int64(elapsed / time.Second), Instances: instances}
}

// String is the line people see: "[4s] cell-1: 3 instances: 2 RUNNING (EVACUATING), 1 CLAIMED".
func (p EvacuationProgress) String() string {
	prefix := fmt.Sprintf("[%s] cell %s: ", ShortDuration(time.Duration(p.ElapsedSeconds)*time.Second), Printable(p.CellID))
	if p.Done {
		return prefix + "gone, evacuation done"
	}
	total := 0
	parts := make([]string, 0, len(p.Instances))
	for _, c := range p.Instances {
		total += c.Count
		parts = append(parts, fmt.Sprintf("%d %s", c.Count, c.label))
	}
	switch total {
	case 0:
		return prefix + "no instances left, waiting for the rep to exit"
	case 1:
		return prefix + "1 instance: " + strings.Join(parts, ", ")
	default:
		return prefix + fmt.Sprintf("%d instances: ", total) + strings.Join(parts, ", ")
	}
}

// Summary is what distinguishes one report from another, ignoring the time.
func (p EvacuationProgress) Summary() string {
	p.ElapsedSeconds = 0
	return p.String()
}
