package bench

import (
	"math"
	"slices"
	"time"
)

// LatencyStats summarises a set of latencies in milliseconds.
type LatencyStats struct {
	Count  int     `json:"count"`
	MinMS  float64 `json:"min_ms"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted, which
// must be in ascending order; it returns 0 for an empty slice. The nearest rank is the
// smallest value such that at least p percent of the samples are less or equal to it.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Summarize computes count, min, mean, p50, p99 and max of the samples; the input is
// not modified.
func Summarize(samples []time.Duration) LatencyStats {
	if len(samples) == 0 {
		return LatencyStats{}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	return LatencyStats{
		Count:  len(sorted),
		MinMS:  Millis(sorted[0]),
		MeanMS: Millis(total / time.Duration(len(sorted))),
		P50MS:  Millis(Percentile(sorted, 50)),
		P99MS:  Millis(Percentile(sorted, 99)),
		MaxMS:  Millis(sorted[len(sorted)-1]),
	}
}

// Millis converts a duration to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Rate returns how many operations per second n operations in elapsed amount to; 0 when
// elapsed is not positive.
func Rate(n int, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}

// Ratio returns a/b, or 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
