package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func sampleReport() *Report {
	return &Report{
		Date:     "2026-11-22T10:00:00Z",
		Machine:  Machine{CPUs: 2, CPUModel: "AMD EPYC", MemoryBytes: 8 << 30, GoVersion: "go1.26", OS: "linux", Arch: "amd64", Postgres: "PostgreSQL 15.8", LoadStart: "0.50 0.60 0.70", LoadEnd: "1.00 2.00 3.00"},
		Settings: Settings{LRPs: 10, Actuals: 100, InstancesPerLRP: 10, Claims: 5, Concurrency: 2, ListRuns: 3, MaxConns: 4},
		Desire:   &Throughput{Ops: 10, Concurrency: 2, WallMS: 50, PerSecond: 200, Latency: LatencyStats{Count: 10, P50MS: 9.5, P99MS: 12}},
		List: &ListResult{
			Rows: 100, Running: 10, Seed: Throughput{Ops: 10, Concurrency: 2, WallMS: 20},
			GRPC:             ListTiming{Runs: LatencyStats{Count: 3, MinMS: 4, P50MS: 5, MaxMS: 6}, RowsPerSecond: 20000},
			Store:            ListTiming{Runs: LatencyStats{Count: 3, MinMS: 2, P50MS: 2.5, MaxMS: 3}, RowsPerSecond: 40000},
			Postgres:         ListTiming{Runs: LatencyStats{Count: 3, MinMS: 1, P50MS: 1.5, MaxMS: 2}, RowsPerSecond: 66667},
			GRPCToStoreRatio: 2, GoalMS: ListGoalMS, GoalMet: true, GRPCBatches: 1, GRPCResponseBytes: 4096,
		},
		ClaimStart: &ClaimStartResult{
			Pairs: Throughput{Ops: 5, Concurrency: 2, WallMS: 10, PerSecond: 500, Latency: LatencyStats{Count: 5, P50MS: 3}},
			Claim: LatencyStats{Count: 5, P50MS: 1.25}, Start: LatencyStats{Count: 5, P50MS: 1.75},
		},
	}
}

func TestWriteTextShowsEveryScenario(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, sampleReport().WriteText(&out))
	text := out.String()
	for _, want := range []string{
		"2 CPUs, AMD EPYC, 8.0 GiB", "PostgreSQL 15.8", "load average: 0.50 0.60 0.70 at the start, 1.00 2.00 3.00 at the end",
		"1. desire 10 LRPs", "200.0 LRPs/s", "9.50", "12.00",
		"2. list 100 ActualLRPs, 10 of them RUNNING (3 runs each)", "seeded in 20 ms (5000 rows/s, 2 clients)",
		"gRPC ListActualLRPs", "store ListActualLRPs", "Postgres query only", "66667", "2.00x", "goal: gRPC p50 under 1000 ms: met",
		"3. claim + start 5 instances", "500.0 pairs/s", "1.25", "1.75",
	} {
		require.Contains(t, text, want)
	}
}

func TestWriteTextOmitsScenariosThatDidNotRun(t *testing.T) {
	r := sampleReport()
	r.Desire, r.ClaimStart = nil, nil
	r.List.GoalMet = false
	var out bytes.Buffer
	require.NoError(t, r.WriteText(&out))
	require.NotContains(t, out.String(), "1. desire")
	require.NotContains(t, out.String(), "3. claim")
	require.Contains(t, out.String(), "MISSED")
}

func TestWriteJSONRoundTrips(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, sampleReport().WriteJSON(&out))
	var back Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &back))
	require.Equal(t, sampleReport(), &back)
	require.Contains(t, out.String(), `"p50_ms": 9.5`)
}

func TestNewThroughput(t *testing.T) {
	got := NewThroughput(4, RunResult{Wall: 2 * time.Second, Latencies: []time.Duration{ms(10), ms(30), ms(20)}})
	require.Equal(t, Throughput{Ops: 3, Concurrency: 4, WallMS: 2000, PerSecond: 1.5,
		Latency: LatencyStats{Count: 3, MinMS: 10, MeanMS: 20, P50MS: 20, P99MS: 30, MaxMS: 30}}, got)
}

func TestNewListTiming(t *testing.T) {
	got := NewListTiming(1000, []time.Duration{ms(200), ms(100), ms(400)})
	require.InDelta(t, 5000.0, got.RowsPerSecond, 1e-9, "rows per second at the median run")
	require.InDelta(t, 100.0, got.Runs.MinMS, 1e-9)
}

func TestLRPSet(t *testing.T) {
	tests := []struct {
		name          string
		total, perLRP int
		want          []int32
	}{
		{"exact", 300, 100, []int32{100, 100, 100}},
		{"remainder", 250, 100, []int32{100, 100, 50}},
		{"one each", 3, 1, []int32{1, 1, 1}},
		{"nothing", 0, 100, nil},
		{"bad size", 10, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lrps := LRPSet("dom", tt.total, tt.perLRP)
			var got []int32
			for i, lrp := range lrps {
				require.Equal(t, ProcessGuid("dom", i), lrp.GetProcessGuid())
				require.Equal(t, "dom", lrp.GetDomain())
				got = append(got, lrp.GetInstances())
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestInstanceKeys(t *testing.T) {
	lrps := LRPSet("dom", 5, 2) // instances 2, 2, 1
	tests := []struct {
		name string
		n    int
		want []string
	}{
		{"none", 0, nil},
		{"within the first LRP", 1, []string{"dom-000000/0"}},
		{"across LRPs", 4, []string{"dom-000000/0", "dom-000000/1", "dom-000001/0", "dom-000001/1"}},
		{"more than there are", 9, []string{"dom-000000/0", "dom-000000/1", "dom-000001/0", "dom-000001/1", "dom-000002/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, k := range InstanceKeys(lrps, tt.n) {
				require.Equal(t, "dom", k.GetDomain())
				got = append(got, fmt.Sprintf("%s/%d", k.GetProcessGuid(), k.GetIndex()))
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Settings: Settings{LRPs: 1, Actuals: 1, InstancesPerLRP: 1, Claims: 1, Concurrency: 1, ListRuns: 1}}
	require.NoError(t, good.Validate())
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"zero concurrency", func(c *Config) { c.Concurrency = 0 }, "concurrency"},
		{"negative lrps", func(c *Config) { c.LRPs = -1 }, "lrps"},
		{"more running than actuals", func(c *Config) { c.ListRunning = 2 }, "list running"},
		{"negative running", func(c *Config) { c.ListRunning = -1 }, "list running"},
		{"unknown scenario", func(c *Config) { c.Scenarios = []string{"list", "nope"} }, `"nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.mutate(&c)
			require.ErrorContains(t, c.Validate(), tt.want)
		})
	}
}
