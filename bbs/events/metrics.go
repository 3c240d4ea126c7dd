package events

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// hubMetrics count subscribers and delivered events.
type hubMetrics struct {
	subscribers prometheus.Gauge
	delivered   prometheus.Counter
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
	}
	if reg != nil {
		m.subscribers = register(reg, m.subscribers)
		m.delivered = register(reg, m.delivered)
	}
	return m
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
