package translate

import (
	"encoding/json"
	"sort"
	"strconv"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// LRPTags are the container tags of an instance: the link from the container back to
// its ActualLRP.
func LRPTags(w *repv1.LRPWork, instanceGuid string) map[string]string {
	return map[string]string{
		executor.TagLifecycle:     executor.LifecycleLRP,
		executor.TagDomain:        w.GetDomain(),
		executor.TagProcessGuid:   w.GetProcessGuid(),
		executor.TagProcessIndex:  strconv.Itoa(int(w.GetIndex())),
		executor.TagInstanceGuid:  instanceGuid,
		executor.TagPlacementTags: jsonList(w.GetPlacementTags()),
		executor.TagVolumeDrivers: jsonList(nil),
		executor.TagRootFS:        w.GetRootfs(),
	}
}

// TaskTags are the container tags of a task (its container guid is the task guid).
func TaskTags(w *repv1.TaskWork) map[string]string {
	return map[string]string{
		executor.TagLifecycle:     executor.LifecycleTask,
		executor.TagDomain:        w.GetDomain(),
		executor.TagPlacementTags: jsonList(w.GetPlacementTags()),
		executor.TagVolumeDrivers: jsonList(nil),
		executor.TagRootFS:        w.GetRootfs(),
	}
}

// LRPAllocation is the executor reservation of one instance.
func LRPAllocation(w *repv1.LRPWork, instanceGuid string) executor.AllocationRequest {
	return executor.AllocationRequest{Guid: instanceGuid, Resource: resource(w.GetResource()), Tags: LRPTags(w, instanceGuid)}
}

// TaskAllocation is the executor reservation of one task.
func TaskAllocation(w *repv1.TaskWork) executor.AllocationRequest {
	return executor.AllocationRequest{Guid: w.GetTaskGuid(), Resource: resource(w.GetResource()), Tags: TaskTags(w)}
}

func resource(r *modelsv1.Resource) executor.Resource {
	return executor.Resource{MemoryMB: int(r.GetMemoryMb()), DiskMB: int(r.GetDiskMb()), MaxPids: int(r.GetMaxPids())}
}

// AdmitLRPs is the rep's memory-only admission (cell.md §2.4): biggest first, each
// instance is taken while its memory fits what is left. It returns the accepted and the
// refused work; the input is not reordered.
func AdmitLRPs(remainingMemoryMB int, lrps []*repv1.LRPWork) (accepted, refused []*repv1.LRPWork) {
	sorted := append([]*repv1.LRPWork(nil), lrps...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].GetResource().GetMemoryMb() > sorted[j].GetResource().GetMemoryMb()
	})
	left := remainingMemoryMB
	for _, w := range sorted {
		need := int(w.GetResource().GetMemoryMb())
		if need <= left {
			left -= need
			accepted = append(accepted, w)
		} else {
			refused = append(refused, w)
		}
	}
	return accepted, refused
}

func jsonList(values []string) string {
	if values == nil {
		values = []string{}
	}
	data, _ := json.Marshal(values) // a []string always marshals
	return string(data)
}

// parseJSONList reads a JSON list tag; anything unreadable is an empty list.
func parseJSONList(value string) []string {
	var out []string
	if value == "" || json.Unmarshal([]byte(value), &out) != nil {
		return nil
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
