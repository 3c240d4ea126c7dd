package evacuation

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the evacuation gauges. A nil *Metrics records nothing.
type Metrics struct {
	evacuating prometheus.Gauge
	stranded   prometheus.Gauge
}

// NewMetrics registers drover_rep_evacuating and drover_rep_stranded_evacuating_lrps on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		evacuating: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_rep_evacuating", Help: "1 once the cell has started evacuating, else 0.",
		}),
		stranded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_rep_stranded_evacuating_lrps",
			Help: "EVACUATING ActualLRPs still on this cell when its evacuation ended (their replacements were not running yet).",
		}),
	}
	for _, c := range []prometheus.Collector{m.evacuating, m.stranded} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) setEvacuating() {
	if m != nil {
		m.evacuating.Set(1)
	}
}

func (m *Metrics) setStranded(n int) {
	if m != nil {
		m.stranded.Set(float64(n))
	}
}
