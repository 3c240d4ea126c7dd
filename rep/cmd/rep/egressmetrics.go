package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// egressSetupBuckets span a few hundred microseconds (a handful of nftables rules) to
// a second (a cell busy creating many containers at once).
var egressSetupBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

// newEgressSetupMetric registers drover_rep_egress_rule_setup_seconds, the time the
// containerd executor took to apply each new container's egress firewall, and returns
// the observer the executor reports to.
func newEgressSetupMetric(reg prometheus.Registerer) (func(time.Duration), error) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "drover_rep_egress_rule_setup_seconds",
		Help:    "Time to apply one new container's egress firewall rules (default and its own).",
		Buckets: egressSetupBuckets,
	})
	if err := reg.Register(h); err != nil {
		return nil, err
	}
	return func(d time.Duration) { h.Observe(d.Seconds()) }, nil
}
