package runner

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the auctioneer's counters (upstream's Auctioneer* metrics).
type Metrics struct {
	LRPAuctionsStarted      prometheus.Counter
	LRPAuctionsFailed       prometheus.Counter
	TaskAuctionsStarted     prometheus.Counter
	TaskAuctionsFailed      prometheus.Counter
	FailedCellStateRequests prometheus.Counter
	FetchStatesDuration     prometheus.Histogram
}

// NewMetrics creates the metrics and registers them with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "drover", Subsystem: "auctioneer", Name: name, Help: help})
	}
	m := &Metrics{
		LRPAuctionsStarted:      counter("lrp_auctions_started_total", "LRP instances placed and sent to a cell."),
		LRPAuctionsFailed:       counter("lrp_auctions_failed_total", "LRP instances that could not be placed."),
		TaskAuctionsStarted:     counter("task_auctions_started_total", "Tasks placed and sent to a cell."),
		TaskAuctionsFailed:      counter("task_auctions_failed_total", "Tasks that could not be placed."),
		FailedCellStateRequests: counter("failed_cell_state_requests_total", "Cell State requests that failed or were unusable."),
		FetchStatesDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "drover", Subsystem: "auctioneer", Name: "fetch_states_duration_seconds",
			Help:    "Time to list the cells and fetch every cell's state.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.LRPAuctionsStarted, m.LRPAuctionsFailed, m.TaskAuctionsStarted,
			m.TaskAuctionsFailed, m.FailedCellStateRequests, m.FetchStatesDuration} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
