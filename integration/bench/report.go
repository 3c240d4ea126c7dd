package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// ListGoalMS is the goal for listing every ActualLRP over gRPC, in milliseconds.
const ListGoalMS = 1000

// Settings are the sizes a run used.
type Settings struct {
	LRPs            int `json:"lrps"`
	Actuals         int `json:"actuals"`
	InstancesPerLRP int `json:"instances_per_lrp"`
	Claims          int `json:"claims"`
	Concurrency     int `json:"concurrency"`
	ListRuns        int `json:"list_runs"`
	// ListRunning is how many of the listed instances are claimed and started first.
	ListRunning int `json:"list_running"`
	MaxConns    int `json:"max_conns"`
}

// Throughput is a concurrent run of Ops operations: its wall time, rate and the latency
// of each operation.
type Throughput struct {
	Ops         int          `json:"ops"`
	Concurrency int          `json:"concurrency"`
	WallMS      float64      `json:"wall_ms"`
	PerSecond   float64      `json:"per_second"`
	Latency     LatencyStats `json:"latency"`
}

// NewThroughput summarises a concurrent run.
func NewThroughput(concurrency int, r RunResult) Throughput {
	return Throughput{
		Ops:         len(r.Latencies),
		Concurrency: concurrency,
		WallMS:      Millis(r.Wall),
		PerSecond:   Rate(len(r.Latencies), r.Wall),
		Latency:     Summarize(r.Latencies),
	}
}

// ListTiming summarises repeated full listings: per-run times and rows per second at
// the median run.
type ListTiming struct {
	Runs          LatencyStats `json:"runs"`
	RowsPerSecond float64      `json:"rows_per_second"`
}

// ListResult is scenario 2: seeding the ActualLRPs, then listing them all over gRPC,
// straight from the store, and as raw rows from Postgres.
type ListResult struct {
	Rows int `json:"rows"`
	// Running is how many of the rows were RUNNING (the rest are UNCLAIMED).
	Running int        `json:"running"`
	Seed    Throughput `json:"seed"`
	GRPC    ListTiming `json:"grpc"`
	Store   ListTiming `json:"store"`
	// Postgres is the store's query with rows received but not decoded.
	Postgres          ListTiming `json:"postgres"`
	GRPCToStoreRatio  float64    `json:"grpc_to_store_ratio"`
	GoalMS            float64    `json:"goal_ms"`
	GoalMet           bool       `json:"goal_met"`
	GRPCBatches       int        `json:"grpc_batches"`
	GRPCResponseBytes int        `json:"grpc_response_bytes"`
}

// ClaimStartResult is scenario 3: claim then start on distinct instances. Pairs holds
// the rate and the latency of the claim+start round trip.
type ClaimStartResult struct {
	Pairs Throughput   `json:"pairs"`
	Claim LatencyStats `json:"claim"`
	Start LatencyStats `json:"start"`
}

// Report is everything one bbsbench run measured.
type Report struct {
	Date       string            `json:"date"`
	Machine    Machine           `json:"machine"`
	Settings   Settings          `json:"settings"`
	Desire     *Throughput       `json:"desire,omitempty"`
	List       *ListResult       `json:"list,omitempty"`
	ClaimStart *ClaimStartResult `json:"claim_start,omitempty"`
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people: one block per scenario that ran.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	m := r.Machine
	fmt.Fprintf(tw, "bbsbench %s\n", r.Date)
	fmt.Fprintf(tw, "machine: %d CPUs, %s, %.1f GiB, %s %s/%s\n", m.CPUs, m.CPUModel,
		float64(m.MemoryBytes)/(1<<30), m.GoVersion, m.OS, m.Arch)
	if m.Postgres != "" {
		fmt.Fprintf(tw, "postgres: %s\n", m.Postgres)
	}
	if m.LoadStart != "" {
		fmt.Fprintf(tw, "load average: %s at the start, %s at the end\n", m.LoadStart, m.LoadEnd)
	}
	fmt.Fprintf(tw, "store pool: %d connections\n", r.Settings.MaxConns)
	if d := r.Desire; d != nil {
		fmt.Fprintf(tw, "\n1. desire %d LRPs (1 instance each), %d concurrent clients\n", d.Ops, d.Concurrency)
		writeThroughput(tw, "LRPs", *d)
		writeLatencyTable(tw, map[string]LatencyStats{"DesireLRP": d.Latency}, "DesireLRP")
	}
	if l := r.List; l != nil {
		fmt.Fprintf(tw, "\n2. list %d ActualLRPs, %d of them RUNNING (%d runs each)\n", l.Rows, l.Running, l.GRPC.Runs.Count)
		fmt.Fprintf(tw, "seeded in %.0f ms (%.0f rows/s, %d clients)\n", l.Seed.WallMS,
			Ratio(float64(l.Rows)*1000, l.Seed.WallMS), l.Seed.Concurrency)
		fmt.Fprintf(tw, "%-22s\tmin ms\tp50 ms\tmax ms\trows/s at p50\t\n", "")
		for _, row := range []struct {
			name string
			t    ListTiming
		}{{"gRPC ListActualLRPs", l.GRPC}, {"store ListActualLRPs", l.Store},
			{"Postgres query only", l.Postgres}} {
			fmt.Fprintf(tw, "%-22s\t%.1f\t%.1f\t%.1f\t%.0f\t\n", row.name, row.t.Runs.MinMS,
				row.t.Runs.P50MS, row.t.Runs.MaxMS, row.t.RowsPerSecond)
		}
		fmt.Fprintf(tw, "gRPC / store at p50: %.2fx; stream: %d batches, %.1f MiB\n",
			l.GRPCToStoreRatio, l.GRPCBatches, float64(l.GRPCResponseBytes)/(1<<20))
		verdict := "met"
		if !l.GoalMet {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "goal: gRPC p50 under %.0f ms: %s\n", l.GoalMS, verdict)
	}
	if c := r.ClaimStart; c != nil {
		fmt.Fprintf(tw, "\n3. claim + start %d instances, %d concurrent clients\n", c.Pairs.Ops, c.Pairs.Concurrency)
		writeThroughput(tw, "pairs", c.Pairs)
		writeLatencyTable(tw, map[string]LatencyStats{
			"ClaimActualLRP": c.Claim, "StartActualLRP": c.Start, "claim + start": c.Pairs.Latency,
		}, "ClaimActualLRP", "StartActualLRP", "claim + start")
	}
	return tw.Flush()
}

func writeThroughput(w io.Writer, unit string, t Throughput) {
	fmt.Fprintf(w, "wall %.0f ms, %.1f %s/s\n", t.WallMS, t.PerSecond, unit)
}

func writeLatencyTable(w io.Writer, rows map[string]LatencyStats, order ...string) {
	fmt.Fprintf(w, "%-16s\tmin ms\tmean ms\tp50 ms\tp99 ms\tmax ms\t\n", "latency")
	for _, name := range order {
		s := rows[name]
		fmt.Fprintf(w, "%-16s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", name, s.MinMS, s.MeanMS, s.P50MS, s.P99MS, s.MaxMS)
	}
}
