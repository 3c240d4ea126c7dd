package translate

import (
	"fmt"
	"sort"
	"strconv"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// States of an allocation in the cell state.
const (
	StateClaimed   = "CLAIMED"
	StateRunning   = "RUNNING"
	StateCrashed   = "CRASHED"
	StateShutdown  = "SHUTDOWN"
	StateCompleted = "COMPLETED"
)

// Cell is what the cell state says about the cell itself.
type Cell struct {
	ID                    string
	Zone                  string
	Total                 executor.Resources
	Remaining             executor.Resources
	RootFSProviders       []*modelsv1.RootFSProvider
	PlacementTags         []string
	OptionalPlacementTags []string
	Evacuating            bool
}

// State is the cell's bid (cell.md §2.3): capacity, every instance and task with its
// state rebuilt from the container tags, and the count of starting containers.
func State(cell Cell, containers []executor.Container) *repv1.StateResponse {
	resp := &repv1.StateResponse{
		CellId:                cell.ID,
		Zone:                  cell.Zone,
		AvailableResources:    Capacity(cell.Remaining),
		TotalResources:        Capacity(cell.Total),
		RootfsProviders:       cell.RootFSProviders,
		PlacementTags:         cell.PlacementTags,
		OptionalPlacementTags: cell.OptionalPlacementTags,
		Evacuating:            cell.Evacuating,
	}
	sorted := append([]executor.Container(nil), containers...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Guid < sorted[j].Guid })
	for _, c := range sorted {
		switch c.State {
		case executor.StateReserved, executor.StateInitializing, executor.StateCreated:
			resp.StartCount++
		}
		res := &modelsv1.Resource{MemoryMb: int32(c.Resource.MemoryMB), DiskMb: int32(c.Resource.DiskMB), MaxPids: int32(c.Resource.MaxPids)}
		switch c.Tags[executor.TagLifecycle] {
		case executor.LifecycleLRP:
			key, instance, err := LRPKeys(c, cell.ID)
			if err != nil {
				continue
			}
			resp.Lrps = append(resp.Lrps, &repv1.LRPAllocation{
				ProcessGuid:   key.GetProcessGuid(),
				Index:         key.GetIndex(),
				Domain:        key.GetDomain(),
				Resource:      res,
				InstanceGuid:  instance.GetInstanceGuid(),
				State:         lrpState(c),
				Rootfs:        c.Tags[executor.TagRootFS],
				PlacementTags: parseJSONList(c.Tags[executor.TagPlacementTags]),
			})
		case executor.LifecycleTask:
			state := StateRunning
			if c.State == executor.StateCompleted {
				state = StateCompleted
			}
			resp.Tasks = append(resp.Tasks, &repv1.TaskAllocation{
				TaskGuid:      c.Guid,
				Domain:        c.Tags[executor.TagDomain],
				Resource:      res,
				State:         state,
				Failed:        c.State == executor.StateCompleted && c.RunResult.Failed,
				Rootfs:        c.Tags[executor.TagRootFS],
				PlacementTags: parseJSONList(c.Tags[executor.TagPlacementTags]),
			})
		}
	}
	return resp
}

// Capacity is executor resources as the BBS's cell capacity.
func Capacity(r executor.Resources) *modelsv1.CellCapacity {
	return &modelsv1.CellCapacity{MemoryMb: int32(r.MemoryMB), DiskMb: int32(r.DiskMB), Containers: int32(r.Containers)}
}

func lrpState(c executor.Container) string {
	switch c.State {
	case executor.StateRunning:
		return StateRunning
	case executor.StateCompleted:
		if c.RunResult.Stopped {
			return StateShutdown
		}
		return StateCrashed
	default:
		return StateClaimed
	}
}

// LRPKeys rebuilds an instance's ActualLRP keys from its container tags; the instance
// key names cellID.
func LRPKeys(c executor.Container, cellID string) (*modelsv1.ActualLRPKey, *modelsv1.ActualLRPInstanceKey, error) {
	processGuid := c.Tags[executor.TagProcessGuid]
	if processGuid == "" {
		return nil, nil, fmt.Errorf("container %s: missing %s tag", c.Guid, executor.TagProcessGuid)
	}
	index, err := strconv.Atoi(c.Tags[executor.TagProcessIndex])
	if err != nil || index < 0 {
		return nil, nil, fmt.Errorf("container %s: bad %s tag %q", c.Guid, executor.TagProcessIndex, c.Tags[executor.TagProcessIndex])
	}
	key := &modelsv1.ActualLRPKey{ProcessGuid: processGuid, Index: int32(index), Domain: c.Tags[executor.TagDomain]}
	instanceGuid := c.Tags[executor.TagInstanceGuid]
	if instanceGuid == "" {
		instanceGuid = c.Guid
	}
	return key, &modelsv1.ActualLRPInstanceKey{InstanceGuid: instanceGuid, CellId: cellID}, nil
}
