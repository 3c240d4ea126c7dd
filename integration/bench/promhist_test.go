package bench

import (
	"math"
	"testing"
)

const samplePage = `# HELP x_seconds Something.
# TYPE x_seconds histogram
x_seconds_bucket{le="0.001"} 0
x_seconds_bucket{le="0.01"} 4
x_seconds_bucket{le="0.1"} 8
x_seconds_bucket{le="+Inf"} 10
x_seconds_sum 0.5
x_seconds_count 10
other_bucket{le="1"} 99
`

func TestParseHistogram(t *testing.T) {
	h, found, err := ParseHistogram(samplePage, "x_seconds")
	if err != nil || !found {
		t.Fatalf("found %v, err %v", found, err)
	}
	if h.Count != 10 || h.Sum != 0.5 || len(h.Buckets) != 4 || h.Buckets[math.Inf(1)] != 10 || h.Buckets[0.01] != 4 {
		t.Fatalf("parsed %+v", h)
	}
	if _, found, _ := ParseHistogram(samplePage, "missing"); found {
		t.Fatal("a histogram not on the page is found")
	}
	if _, _, err := ParseHistogram("x_seconds_count abc\n", "x_seconds"); err == nil {
		t.Fatal("a bad value is accepted")
	}
}

func TestHistogramQuantile(t *testing.T) {
	h, _, _ := ParseHistogram(samplePage, "x_seconds")
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	// rank 5 lies in (0.01, 0.1] holding ranks 4..8: a quarter of the way.
	if got := h.Quantile(0.5); !near(got, 0.01+0.09*0.25) {
		t.Fatalf("p50 %v", got)
	}
	// rank 2 lies in (0.001, 0.01].
	if got := h.Quantile(0.2); !near(got, 0.001+0.009*0.5) {
		t.Fatalf("p20 %v", got)
	}
	// rank 9.9 lies in +Inf: the highest finite bound.
	if got := h.Quantile(0.99); got != 0.1 {
		t.Fatalf("p99 %v", got)
	}
	if got := (Histogram{}).Quantile(0.5); got != 0 {
		t.Fatalf("empty p50 %v", got)
	}
	later, _, _ := ParseHistogram(samplePage, "x_seconds")
	later.Buckets[0.01], later.Buckets[0.1], later.Buckets[math.Inf(1)], later.Count = 6, 10, 12, 12
	d := later.Sub(h)
	if d.Count != 2 || d.Buckets[0.01] != 2 || d.Buckets[math.Inf(1)] != 2 || d.Buckets[0.001] != 0 {
		t.Fatalf("delta %+v", d)
	}
	if got := d.Quantile(0.5); !near(got, 0.001+0.009*0.5) {
		t.Fatalf("delta p50 %v", got)
	}
}
