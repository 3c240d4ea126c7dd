package main

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestEgressSetupMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	observe, err := newEgressSetupMetric(reg)
	if err != nil {
		t.Fatal(err)
	}
	observe(3 * time.Millisecond)
	observe(40 * time.Millisecond)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "drover_rep_egress_rule_setup_seconds" {
		t.Fatalf("gathered %v", families)
	}
	h := families[0].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() < 0.042 || h.GetSampleSum() > 0.044 {
		t.Fatalf("count %d sum %v, want 2 and 0.043", h.GetSampleCount(), h.GetSampleSum())
	}
	if _, err := newEgressSetupMetric(reg); err == nil {
		t.Fatal("registering the metric twice succeeds")
	}
}
