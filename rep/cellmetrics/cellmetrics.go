// Package cellmetrics exports the cell's capacity and containers as Prometheus gauges,
// read from the executor at every scrape (upstream's CapacityTotal*, CapacityRemaining*,
// ContainerCount and StartingContainerCount).
package cellmetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/executor"
)

// listTimeout bounds the executor call of one scrape.
const listTimeout = 2 * time.Second

// Collector reads the executor on each scrape.
type Collector struct {
	exec       executor.Client
	total      *prometheus.Desc
	remaining  *prometheus.Desc
	containers *prometheus.Desc
	healthy    *prometheus.Desc
}

// New returns a collector of exec's capacity and containers.
func New(exec executor.Client) *Collector {
	return &Collector{
		exec: exec,
		total: prometheus.NewDesc("drover_rep_capacity_total", "The cell's capacity by resource (memory_mb, disk_mb, containers).",
			[]string{"resource"}, nil),
		remaining: prometheus.NewDesc("drover_rep_capacity_remaining", "Capacity not reserved by any container, by resource.",
			[]string{"resource"}, nil),
		containers: prometheus.NewDesc("drover_rep_containers", "Containers held by the executor, by state.",
			[]string{"state"}, nil),
		healthy: prometheus.NewDesc("drover_rep_executor_healthy", "1 when the container backend answers.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.total
	ch <- c.remaining
	ch <- c.containers
	ch <- c.healthy
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	resources := func(desc *prometheus.Desc, r executor.Resources) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(r.MemoryMB), "memory_mb")
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(r.DiskMB), "disk_mb")
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(r.Containers), "containers")
	}
	resources(c.total, c.exec.TotalResources())
	resources(c.remaining, c.exec.RemainingResources())

	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	healthy := 0.0
	if c.exec.Healthy(ctx) {
		healthy = 1
	}
	ch <- prometheus.MustNewConstMetric(c.healthy, prometheus.GaugeValue, healthy)
	containers, err := c.exec.List(ctx)
	if err != nil {
		return
	}
	counts := map[executor.State]int{}
	for _, ct := range containers {
		counts[ct.State]++
	}
	for _, s := range []executor.State{executor.StateReserved, executor.StateInitializing, executor.StateCreated, executor.StateRunning, executor.StateCompleted} {
		ch <- prometheus.MustNewConstMetric(c.containers, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}
