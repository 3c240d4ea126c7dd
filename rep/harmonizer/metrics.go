package harmonizer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/bbs/models"
)

// Metrics counts what the harmonizer does. A nil *Metrics records nothing.
type Metrics struct {
	bbsCalls     *prometheus.CounterVec
	events       *prometheus.CounterVec
	syncDuration prometheus.Histogram
	syncFailures prometheus.Counter
}

// NewMetrics registers the harmonizer's metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		bbsCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rep_bbs_calls_total", Help: "BBS calls made by the rep's harmonizer, by call and result type.",
		}, []string{"call", "result"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rep_executor_events_total", Help: "Executor lifecycle events consumed, by type.",
		}, []string{"type"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rep_bulk_sync_duration_seconds", Help: "Duration of the rep's bulk syncs with the BBS.",
			Buckets: prometheus.DefBuckets,
		}),
		syncFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rep_bulk_sync_failures_total", Help: "Bulk syncs skipped because a fetch failed.",
		}),
	}
	for _, c := range []prometheus.Collector{m.bbsCalls, m.events, m.syncDuration, m.syncFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) bbsCall(call string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = string(models.FromError(err).Type)
	}
	m.bbsCalls.WithLabelValues(call, result).Inc()
}

func (m *Metrics) event(kind string) {
	if m != nil {
		m.events.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) bulkSync(d time.Duration, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.syncFailures.Inc()
		return
	}
	m.syncDuration.Observe(d.Seconds())
}
