package cellmetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	"drover.dev/rep/internal/fakeexec"
)

func TestCollectorReportsCapacityAndContainers(t *testing.T) {
	exec := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 2048, Containers: 10})
	exec.Put(executor.Container{Guid: "a", State: executor.StateRunning, Resource: executor.Resource{MemoryMB: 128, DiskMB: 256}})
	exec.Put(executor.Container{Guid: "b", State: executor.StateReserved, Resource: executor.Resource{MemoryMB: 64, DiskMB: 64}})

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(New(exec)))
	remaining := exec.RemainingResources()
	expected := `
# HELP drover_rep_capacity_total The cell's capacity by resource (memory_mb, disk_mb, containers).
# TYPE drover_rep_capacity_total gauge
drover_rep_capacity_total{resource="containers"} 10
drover_rep_capacity_total{resource="disk_mb"} 2048
drover_rep_capacity_total{resource="memory_mb"} 1024
# HELP drover_rep_containers Containers held by the executor, by state.
# TYPE drover_rep_containers gauge
drover_rep_containers{state="completed"} 0
drover_rep_containers{state="created"} 0
drover_rep_containers{state="initializing"} 0
drover_rep_containers{state="reserved"} 1
drover_rep_containers{state="running"} 1
# HELP drover_rep_executor_healthy 1 when the container backend answers.
# TYPE drover_rep_executor_healthy gauge
drover_rep_executor_healthy 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected),
		"drover_rep_capacity_total", "drover_rep_containers", "drover_rep_executor_healthy"))
	require.Equal(t, 3, testutil.CollectAndCount(New(exec), "drover_rep_capacity_remaining"))
	require.Equal(t, float64(remaining.MemoryMB), gaugeValue(t, reg, "drover_rep_capacity_remaining", "memory_mb"))

	exec.SetUnhealthy(true)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP drover_rep_executor_healthy 1 when the container backend answers.
# TYPE drover_rep_executor_healthy gauge
drover_rep_executor_healthy 0
`), "drover_rep_executor_healthy"))
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name, resource string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" && l.GetValue() == resource {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{resource=%q}", name, resource)
	return 0
}
