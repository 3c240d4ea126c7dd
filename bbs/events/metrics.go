package events

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// The api label values of drover_bbs_event_subscribers_too_slow_total.
const (
	apiGRPC = "grpc"
	// APISSE labels the HTTP API's Server-Sent Events streams (see CountTooSlowSSE).
	APISSE = "sse"
)

// hubMetrics count subscribers, delivered events, and subscribers disconnected as too
// slow or refused over their identity's cap.
type hubMetrics struct {
	subscribers prometheus.Gauge
	delivered   prometheus.Counter
	tooSlow     *prometheus.CounterVec
	refused     prometheus.Counter
}

func newHubMetrics(reg prometheus.Registerer) *hubMetrics {
	m := &hubMetrics{
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "drover", Subsystem: "bbs",
			Name: "event_subscribers",
			Help: "Event stream subscribers currently connected.",
		}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "drover", Subsystem: "bbs",
			Name: "events_delivered_total",
			Help: "Events sent to subscribers.",
		}),
		tooSlow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "drover", Subsystem: "bbs",
			Name: "event_subscribers_too_slow_total",
			Help: "Event streams disconnected because an event could not be sent within event_write_timeout, by API (grpc, sse).",
		}, []string{"api"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "drover", Subsystem: "bbs",
			Name: "event_subscribers_refused_total",
			Help: "Event streams refused because their identity already had max_subscribers_per_identity open.",
		}),
	}
	m.tooSlow.WithLabelValues(apiGRPC)
	m.tooSlow.WithLabelValues(APISSE)
	if reg != nil {
		m.subscribers = register(reg, m.subscribers)
		m.delivered = register(reg, m.delivered)
		m.tooSlow = register(reg, m.tooSlow)
		m.refused = register(reg, m.refused)
	}
	return m
}

// CountTooSlowSSE counts a Server-Sent Events stream that the HTTP API disconnected
// because a write missed its deadline.
func (h *Hub) CountTooSlowSSE() {
	h.metrics.tooSlow.WithLabelValues(APISSE).Inc()
}

// register registers c, or returns the collector already registered under its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}
