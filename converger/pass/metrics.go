package pass

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every converger metric.
const Namespace = "drover_converger"

// Metrics are the converger's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	passes   *prometheus.CounterVec
	duration prometheus.Histogram
	phases   *prometheus.HistogramVec
	actions  *prometheus.CounterVec
	last     map[string]prometheus.Gauge
	domains  *prometheus.GaugeVec
}

// lastPassGauges name the gauges set from each planned pass, with their help.
var lastPassGauges = map[string]string{
	"desired":          "DesiredLRPs in the last pass.",
	"missing":          "Indices without an ORDINARY instance in the last pass.",
	"extra":            "ORDINARY instances beyond the desired count in the last pass.",
	"orphaned":         "ORDINARY instances without a DesiredLRP in the last pass.",
	"crashed":          "CRASHED ORDINARY instances in the last pass.",
	"restarted":        "CRASHED instances due to restart in the last pass.",
	"stale_unclaimed":  "UNCLAIMED instances re-auctioned in the last pass.",
	"suspect_running":  "SUSPECT RUNNING instances in the last pass.",
	"suspect_claimed":  "SUSPECT CLAIMED instances in the last pass.",
	"retired":          "Instances retired in the last pass.",
	"kept_stale":       "Extra or orphaned instances kept because their domain is stale.",
	"kept_paused":      "Extra or orphaned instances kept because convergence is paused.",
	"present_cells":    "Live cells in the last pass.",
	"suspect_cells":    "Vanished cells still named by CLAIMED/RUNNING instances.",
	"tasks_pending":    "PENDING tasks in the last pass.",
	"tasks_running":    "RUNNING tasks in the last pass.",
	"tasks_completed":  "COMPLETED tasks in the last pass.",
	"tasks_resolving":  "RESOLVING tasks in the last pass.",
	"tasks_kicked":     "PENDING tasks sent to the auctioneer again in the last pass.",
	"paused":           "1 when the last pass held back destructive actions (maintenance).",
	"actual_lrps":      "ActualLRP rows in the last pass.",
	"last_pass_failed": "1 when the last pass failed.",
}

// NewMetrics registers the converger's metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "passes_total", Help: "Convergence passes by result (ok or error).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "pass_duration_seconds", Help: "Duration of a convergence pass (snapshot, plan and apply).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "phase_duration_seconds", Help: "Duration of a pass phase (snapshot, plan, apply).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"phase"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "actions_total", Help: "Corrective actions by kind and outcome (applied, refused, error).",
		}, []string{"kind", "outcome"}),
		last: map[string]prometheus.Gauge{},
		domains: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "domain_fresh", Help: "1 when the domain was fresh in the last pass, 0 when stale.",
		}, []string{"domain"}),
	}
	collectors := []prometheus.Collector{m.passes, m.duration, m.phases, m.actions, m.domains}
	for name, help := range lastPassGauges {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help})
		m.last[name] = g
		collectors = append(collectors, g)
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// action counts one action's outcome.
func (m *Metrics) action(kind, outcome string) {
	if m == nil {
		return
	}
	m.actions.WithLabelValues(kind, outcome).Inc()
}

// observe records a finished pass: durations and result always, the last-pass gauges
// and domain freshness when a plan was made.
func (m *Metrics) observe(sum Summary, err error) {
	if m == nil {
		return
	}
	result, failed := "ok", 0.0
	if err != nil {
		result, failed = "error", 1
	}
	m.passes.WithLabelValues(result).Inc()
	m.last["last_pass_failed"].Set(failed)
	m.duration.Observe(sum.Total().Seconds())
	m.phases.WithLabelValues("snapshot").Observe(sum.Snapshot.Seconds())
	if !sum.Planned {
		return
	}
	m.phases.WithLabelValues("plan").Observe(sum.Plan.Seconds())
	m.phases.WithLabelValues("apply").Observe(sum.Apply.Seconds())

	l, t := sum.Result.LRPCounts, sum.Result.TaskCounts
	paused := 0
	if sum.Pass.GetPaused() {
		paused = 1
	}
	for name, v := range map[string]int{
		"desired": l.Desired, "missing": l.Missing, "extra": l.Extra, "orphaned": l.Orphaned,
		"crashed": l.Crashed, "restarted": l.Restarted, "stale_unclaimed": l.StaleUnclaimed,
		"suspect_running": l.SuspectRunning, "suspect_claimed": l.SuspectClaimed, "retired": l.Retired,
		"kept_stale": l.KeptStale, "kept_paused": l.KeptPaused, "present_cells": l.PresentCells,
		"suspect_cells": l.SuspectCells, "tasks_pending": t.Pending, "tasks_running": t.Running,
		"tasks_completed": t.Completed, "tasks_resolving": t.Resolving, "tasks_kicked": t.Kicked,
		"paused": paused, "actual_lrps": int(sum.Pass.GetActualLrps()),
	} {
		m.last[name].Set(float64(v))
	}
	m.domains.Reset()
	for domain, fresh := range sum.Result.Domains {
		v := 0.0
		if fresh {
			v = 1
		}
		m.domains.WithLabelValues(domain).Set(v)
	}
}
