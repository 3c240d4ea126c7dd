package handlers

import (
	"context"
	"strconv"

	"drover.dev/executor"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// ContainerMetrics reports every container's usage with the instance or task it runs.
func (s *Server) ContainerMetrics(ctx context.Context, _ *repv1.ContainerMetricsRequest) (*repv1.ContainerMetricsResponse, error) {
	containers, err := s.exec.List(ctx)
	if err != nil {
		return nil, executorError("list containers", err)
	}
	usage, err := s.exec.Metrics(ctx)
	if err != nil {
		return nil, executorError("metrics", err)
	}
	byGuid := make(map[string]executor.Container, len(containers))
	for _, c := range containers {
		byGuid[c.Guid] = c
	}
	resp := &repv1.ContainerMetricsResponse{CellId: s.cell.ID}
	for _, m := range usage {
		metric := &repv1.ContainerMetric{
			ContainerGuid:    m.Guid,
			CpuTimeNs:        m.CPUTimeNs,
			MemoryBytes:      m.MemoryBytes,
			MemoryQuotaBytes: m.MemoryQuotaBytes,
			DiskBytes:        m.DiskBytes,
			DiskQuotaBytes:   m.DiskQuotaBytes,
			Pids:             m.Pids,
		}
		if c, ok := byGuid[m.Guid]; ok {
			switch c.Tags[executor.TagLifecycle] {
			case executor.LifecycleLRP:
				metric.ProcessGuid = c.Tags[executor.TagProcessGuid]
				index, _ := strconv.Atoi(c.Tags[executor.TagProcessIndex])
				metric.Index = int32(index)
			case executor.LifecycleTask:
				metric.TaskGuid = c.Guid
			}
		}
		resp.Metrics = append(resp.Metrics, metric)
	}
	return resp, nil
}
