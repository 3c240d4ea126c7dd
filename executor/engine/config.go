// Package engine is the executor: it implements executor.Client on an executor.Runtime.
// It keeps container states (reserved → initializing → created → running → completed)
// and resources, runs action trees through the steps package, watches health, keeps
// logs, emits events, expires reservations, reaps containers that vanished or that
// nobody knows, and adopts the containers of an earlier executor after a restart.
package engine

import (
	"time"

	"drover.dev/executor"
	"drover.dev/executor/steps"
)

// Downloader serves download actions and cached dependencies (see steps.Downloader;
// convert a download.Request with download.Request(req) in an adapter).
type Downloader = steps.Downloader

// Config tunes the executor; zero fields take the defaults below.
type Config struct {
	// Capacity is the cell's total resources.
	Capacity executor.Resources
	// CellID names the cell in lifecycle log lines.
	CellID string
	// StateDir is reserved for on-disk state (unused: adoption state lives with the
	// runtime's containers).
	StateDir string
	// GracePeriod is the wait between SIGTERM and SIGKILL (10s).
	GracePeriod time.Duration
	// UnhealthyInterval separates startup health checks (500ms).
	UnhealthyInterval time.Duration
	// HealthyInterval separates liveness health checks (30s).
	HealthyInterval time.Duration
	// ReservedExpiration is how long a reservation may wait for Run (1m).
	ReservedExpiration time.Duration
	// ReapInterval is how often the runtime's containers are compared with the store (1m).
	ReapInterval time.Duration
	// MetricsInterval is how often the rep should poll metrics (15s); kept for its use.
	MetricsInterval time.Duration
	// LogLinesPerContainer bounds each container's log buffer (1000).
	LogLinesPerContainer int
	// MaxConcurrentDownloads and MaxConcurrentUploads limit transfers cell-wide (5 each).
	MaxConcurrentDownloads int
	MaxConcurrentUploads   int
}

// Defaults.
const (
	DefaultGracePeriod          = 10 * time.Second
	DefaultUnhealthyInterval    = 500 * time.Millisecond
	DefaultHealthyInterval      = 30 * time.Second
	DefaultReservedExpiration   = time.Minute
	DefaultReapInterval         = time.Minute
	DefaultMetricsInterval      = 15 * time.Second
	DefaultLogLinesPerContainer = 1000
	DefaultMaxTransfers         = 5
	// MaxFailureReasonBytes bounds RunResult.FailureReason.
	MaxFailureReasonBytes = 10000
)

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func orInt(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	c.GracePeriod = orDuration(c.GracePeriod, DefaultGracePeriod)
	c.UnhealthyInterval = orDuration(c.UnhealthyInterval, DefaultUnhealthyInterval)
	c.HealthyInterval = orDuration(c.HealthyInterval, DefaultHealthyInterval)
	c.ReservedExpiration = orDuration(c.ReservedExpiration, DefaultReservedExpiration)
	c.ReapInterval = orDuration(c.ReapInterval, DefaultReapInterval)
	c.MetricsInterval = orDuration(c.MetricsInterval, DefaultMetricsInterval)
	c.LogLinesPerContainer = orInt(c.LogLinesPerContainer, DefaultLogLinesPerContainer)
	c.MaxConcurrentDownloads = orInt(c.MaxConcurrentDownloads, DefaultMaxTransfers)
	c.MaxConcurrentUploads = orInt(c.MaxConcurrentUploads, DefaultMaxTransfers)
	return c
}
