// Package metrics are the stager's Prometheus metrics.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a staging.
const (
	Succeeded = "succeeded"
	Failed    = "failed"
	Cancelled = "cancelled"
)

// Metrics are the stager's metrics.
type Metrics struct {
	Stagings *prometheus.CounterVec
	Duration prometheus.Histogram
	InFlight prometheus.Gauge
}

// New registers the metrics with reg (nil: not registered, for tests).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Stagings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_stager_stagings_total", Help: "Stagings that ended, by outcome (succeeded, failed, cancelled).",
		}, []string{"outcome"}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "drover_stager_staging_duration_seconds", Help: "How long stagings took, from the request to the final event.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900},
		}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_stager_stagings_in_flight", Help: "Stagings in progress.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.Stagings, m.Duration, m.InFlight} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	for _, o := range []string{Succeeded, Failed, Cancelled} {
		m.Stagings.WithLabelValues(o)
	}
	return m, nil
}

// Started counts a staging in flight and returns the function that records its end.
func (m *Metrics) Started() (ended func(outcome string)) {
	start := time.Now()
	m.InFlight.Inc()
	return func(outcome string) {
		m.InFlight.Dec()
		m.Stagings.WithLabelValues(outcome).Inc()
		m.Duration.Observe(time.Since(start).Seconds())
	}
}
