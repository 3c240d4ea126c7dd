package handlers

import (
	"context"

	"drover.dev/executor"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/translate"
)

// Perform reserves containers for the work it can take (cell.md §2.4) and returns the
// rest. Claiming and running follow from the executor's reserved events. A cell that
// evacuates takes nothing.
func (s *Server) Perform(ctx context.Context, req *repv1.PerformRequest) (*repv1.PerformResponse, error) {
	if id := req.GetCellId(); id != "" && id != s.cell.ID {
		s.logger.Error("perform-for-another-cell", "requested_cell_id", id)
		return &repv1.PerformResponse{FailedLrps: req.GetLrps(), FailedTasks: req.GetTasks()}, nil
	}
	if s.evacuating() {
		s.logger.Info("perform-refused", "reason", ReasonEvacuating, "failed_lrps", len(req.GetLrps()), "failed_tasks", len(req.GetTasks()))
		return &repv1.PerformResponse{FailedLrps: req.GetLrps(), FailedTasks: req.GetTasks()}, nil
	}
	resp := &repv1.PerformResponse{}
	providers := s.exec.RootFSProviders()
	accepted, refused := translate.AdmitLRPs(s.exec.RemainingResources().MemoryMB, req.GetLrps())
	resp.FailedLrps = append(resp.FailedLrps, refused...)

	var allocations []executor.AllocationRequest
	lrpByGuid := map[string]*repv1.LRPWork{}
	taskByGuid := map[string]*repv1.TaskWork{}
	for _, w := range accepted {
		if w.GetProcessGuid() == "" || w.GetIndex() < 0 || translate.CheckRootFS(w.GetRootfs(), providers) != nil {
			resp.FailedLrps = append(resp.FailedLrps, w)
			continue
		}
		guid := translate.NewInstanceGuid()
		lrpByGuid[guid] = w
		allocations = append(allocations, translate.LRPAllocation(w, guid))
	}
	for _, w := range req.GetTasks() {
		if w.GetTaskGuid() == "" || taskByGuid[w.GetTaskGuid()] != nil || translate.CheckRootFS(w.GetRootfs(), providers) != nil {
			resp.FailedTasks = append(resp.FailedTasks, w)
			continue
		}
		taskByGuid[w.GetTaskGuid()] = w
		allocations = append(allocations, translate.TaskAllocation(w))
	}
	if len(allocations) > 0 {
		for _, f := range s.exec.Allocate(ctx, allocations) {
			if w, ok := lrpByGuid[f.Request.Guid]; ok {
				resp.FailedLrps = append(resp.FailedLrps, w)
			} else if w, ok := taskByGuid[f.Request.Guid]; ok {
				resp.FailedTasks = append(resp.FailedTasks, w)
			}
			s.logger.Info("allocation-failed", "container_guid", f.Request.Guid, "error", f.Err.Error())
		}
	}
	s.logger.Info("performed", "lrps", len(req.GetLrps()), "tasks", len(req.GetTasks()),
		"failed_lrps", len(resp.FailedLrps), "failed_tasks", len(resp.FailedTasks))
	return resp, nil
}
