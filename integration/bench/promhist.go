package bench

import (
	"bufio"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Histogram is one Prometheus histogram read from a text /metrics page: its cumulative
// buckets by upper bound (+Inf included), its count and its sum.
type Histogram struct {
	Buckets map[float64]float64
	Count   float64
	Sum     float64
}

// ParseHistogram finds the unlabelled histogram name in a Prometheus text exposition.
// found is false when the page has no name_count sample.
func ParseHistogram(page, name string) (h Histogram, found bool, err error) {
	h.Buckets = map[float64]float64{}
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		metric, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		switch {
		case metric == name+"_count":
			if h.Count, err = parseSample(line, value); err != nil {
				return h, false, err
			}
			found = true
		case metric == name+"_sum":
			if h.Sum, err = parseSample(line, value); err != nil {
				return h, false, err
			}
		case strings.HasPrefix(metric, name+`_bucket{le="`) && strings.HasSuffix(metric, `"}`):
			le := strings.TrimSuffix(strings.TrimPrefix(metric, name+`_bucket{le="`), `"}`)
			bound, err := strconv.ParseFloat(le, 64)
			if err != nil {
				return h, false, fmt.Errorf("%q: bucket bound: %w", line, err)
			}
			if h.Buckets[bound], err = parseSample(line, value); err != nil {
				return h, false, err
			}
		}
	}
	return h, found, sc.Err()
}

func parseSample(line, value string) (float64, error) {
	value, _, _ = strings.Cut(strings.TrimSpace(value), " ") // drop a timestamp
	v, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: value: %w", line, err)
	}
	return v, nil
}

// Sub is the observations of h made since earlier (a reading of the same histogram).
func (h Histogram) Sub(earlier Histogram) Histogram {
	out := Histogram{Buckets: map[float64]float64{}, Count: h.Count - earlier.Count, Sum: h.Sum - earlier.Sum}
	for le, n := range h.Buckets {
		out.Buckets[le] = n - earlier.Buckets[le]
	}
	return out
}

// Quantile estimates the q-quantile (0..1) as Prometheus's histogram_quantile does:
// linear within the bucket holding it, the highest finite bound when that bucket is
// +Inf, 0 when there are no observations.
func (h Histogram) Quantile(q float64) float64 {
	bounds := make([]float64, 0, len(h.Buckets))
	for le := range h.Buckets {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || h.Buckets[bounds[len(bounds)-1]] <= 0 {
		return 0
	}
	total := h.Buckets[bounds[len(bounds)-1]]
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		n := h.Buckets[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			if n == below {
				return le
			}
			return lower + (le-lower)*(rank-below)/(n-below)
		}
		lower, below = le, n
	}
	return lower
}
