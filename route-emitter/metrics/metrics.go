// Package metrics holds the route-emitter's Prometheus metrics. A nil *Metrics records
// nothing, so cores and tests can run without a registry.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every route-emitter metric.
const Namespace = "drover_route_emitter"

// Metrics are the route-emitter's Prometheus metrics.
type Metrics struct {
	routes              prometheus.Gauge
	registered          prometheus.Counter
	unregistered        prometheus.Counter
	syncDuration        prometheus.Histogram
	eventLag            prometheus.Histogram
	registrationLatency prometheus.Histogram
	natsConnected       prometheus.Gauge
	collisions          prometheus.Counter
}

// New registers the metrics on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	latency := prometheus.ExponentialBuckets(0.001, 2, 16)
	m := &Metrics{
		routes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "routes_total",
			Help: "HTTP registrations (uri × endpoint) in the routing table."}),
		registered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "registered_messages_total",
			Help: "router.register messages published."}),
		unregistered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "unregistered_messages_total",
			Help: "router.unregister messages published (re-sends included)."}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "sync_duration_seconds",
			Help: "Duration of a full sync with the BBS.", Buckets: latency}),
		eventLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "event_lag_seconds",
			Help: "Time from a BBS event's commit to its handling.", Buckets: latency}),
		registrationLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "running_to_registered_seconds",
			Help: "Time from an instance turning RUNNING to its router.register.", Buckets: latency}),
		natsConnected: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "nats_connected",
			Help: "1 while the NATS connection is up."}),
		collisions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "address_collisions_total",
			Help: "New endpoints at a host:port another instance held."}),
	}
	for _, c := range []prometheus.Collector{m.routes, m.registered, m.unregistered, m.syncDuration, m.eventLag,
		m.registrationLatency, m.natsConnected, m.collisions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Routes sets the routing table size.
func (m *Metrics) Routes(n int) {
	if m != nil {
		m.routes.Set(float64(n))
	}
}

// Published counts published registrations and unregistrations.
func (m *Metrics) Published(registrations, unregistrations int) {
	if m != nil {
		m.registered.Add(float64(registrations))
		m.unregistered.Add(float64(unregistrations))
	}
}

// SyncDuration records one full sync.
func (m *Metrics) SyncDuration(d time.Duration) {
	if m != nil {
		m.syncDuration.Observe(d.Seconds())
	}
}

// EventLag records now − an event's commit time (Unix nanoseconds).
func (m *Metrics) EventLag(createdAt int64, now time.Time) {
	if m != nil && createdAt > 0 {
		m.eventLag.Observe(now.Sub(time.Unix(0, createdAt)).Seconds())
	}
}

// RegistrationLatency records now − since for a new endpoint's registration.
func (m *Metrics) RegistrationLatency(since int64, now time.Time) {
	if m != nil && since > 0 {
		m.registrationLatency.Observe(now.Sub(time.Unix(0, since)).Seconds())
	}
}

// NATSConnected sets the connection gauge.
func (m *Metrics) NATSConnected(up bool) {
	if m != nil {
		v := 0.0
		if up {
			v = 1
		}
		m.natsConnected.Set(v)
	}
}

// AddressCollisions counts address collisions.
func (m *Metrics) AddressCollisions(n int) {
	if m != nil && n > 0 {
		m.collisions.Add(float64(n))
	}
}
