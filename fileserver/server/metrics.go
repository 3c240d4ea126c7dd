package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the fileserver's Prometheus metrics.
type Metrics struct {
	// Requests counts answered requests by route name and status code.
	Requests *prometheus.CounterVec
	// UploadBytes counts stored upload bytes by kind ("blob", "package").
	UploadBytes *prometheus.CounterVec
	// PackageFiles counts package files by source ("received", "reused").
	PackageFiles *prometheus.CounterVec
	// Refusals counts refused requests by reason.
	Refusals *prometheus.CounterVec
	// MatchesInFlight is the number of resource matches in progress.
	MatchesInFlight prometheus.Gauge
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_fileserver_requests_total", Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "code"}),
		UploadBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_fileserver_upload_bytes_total", Help: "Bytes stored from uploads: whole blobs, and the received files of packages.",
		}, []string{"kind"}),
		PackageFiles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_fileserver_package_files_total", Help: "Files of assembled packages, received in the upload or reused from the pool.",
		}, []string{"source"}),
		Refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_fileserver_refusals_total", Help: "Requests refused, by reason.",
		}, []string{"reason"}),
		MatchesInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_fileserver_resource_matches_in_flight", Help: "Resource matches in progress (bounded by max_concurrent_matches).",
		}),
	}
	for _, c := range []prometheus.Collector{m.Requests, m.UploadBytes, m.PackageFiles, m.Refusals, m.MatchesInFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
