package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// Scenario names.
const (
	ScenarioDesire = "desire"
	ScenarioList   = "list"
	ScenarioClaim  = "claim"
)

// ClaimDomain holds the LRPs the claim+start scenario desires for itself.
const ClaimDomain = "bench-claim"

// Config says what a run measures.
type Config struct {
	Settings
	// Scenarios selects what runs, by name (ScenarioDesire, ScenarioList,
	// ScenarioClaim); empty runs all three.
	Scenarios []string
	// ListProfile, when set, receives a CPU profile of the timed gRPC listings.
	ListProfile io.Writer
	// Progress, when set, receives one line per step.
	Progress io.Writer
}

// Validate reports sizes that cannot run.
func (c Config) Validate() error {
	var errs []error
	for _, v := range []struct {
		name string
		val  int
	}{
		{"lrps", c.LRPs}, {"actuals", c.Actuals}, {"instances per LRP", c.InstancesPerLRP},
		{"claims", c.Claims}, {"concurrency", c.Concurrency}, {"list runs", c.ListRuns},
	} {
		if v.val < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", v.name, v.val))
		}
	}
	if c.ListRunning < 0 || c.ListRunning > c.Actuals {
		errs = append(errs, fmt.Errorf("list running must be between 0 and actuals (%d), got %d", c.Actuals, c.ListRunning))
	}
	for _, s := range c.Scenarios {
		if s != ScenarioDesire && s != ScenarioList && s != ScenarioClaim {
			errs = append(errs, fmt.Errorf("unknown scenario %q", s))
		}
	}
	return errors.Join(errs...)
}

func (c Config) runs(scenario string) bool {
	return len(c.Scenarios) == 0 || slices.Contains(c.Scenarios, scenario)
}

func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// Run measures the selected scenarios against the stack and returns the report. The
// listing runs first, so that it lists exactly cfg.Actuals rows; then the desires;
// then claim+start on LRPs desired for it.
func Run(ctx context.Context, stack *Stack, cfg Config) (*Report, error) {
	if stack == nil || stack.Database == nil || stack.Store == nil {
		return nil, errors.New("run: the stack is not started")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	machine := DescribeMachine()
	machine.Postgres = stack.Database.ServerVersion
	machine.LoadStart = LoadAverage()
	report := &Report{Date: time.Now().UTC().Format(time.RFC3339), Machine: machine, Settings: cfg.Settings}
	clients, err := stack.NewClients(cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	if cfg.runs(ScenarioList) {
		if report.List, err = runList(ctx, stack, clients, cfg); err != nil {
			return nil, err
		}
	}
	if cfg.runs(ScenarioDesire) {
		cfg.progress("desiring %d LRPs with %d clients", cfg.LRPs, cfg.Concurrency)
		d, err := DesireLRPs(ctx, clients, LRPSet(DesireDomain, cfg.LRPs, 1), cfg.Concurrency)
		if err != nil {
			return nil, err
		}
		report.Desire = &d
	}
	if cfg.runs(ScenarioClaim) {
		cfg.progress("desiring %d LRPs to claim", cfg.Claims)
		lrps := LRPSet(ClaimDomain, cfg.Claims, 1)
		if _, err := DesireLRPs(ctx, clients, lrps, cfg.Concurrency); err != nil {
			return nil, err
		}
		cfg.progress("claiming and starting %d instances with %d clients", cfg.Claims, cfg.Concurrency)
		if report.ClaimStart, err = ClaimStart(ctx, clients, FirstInstances(lrps), cfg.Concurrency); err != nil {
			return nil, err
		}
	}
	report.Machine.LoadEnd = LoadAverage()
	return report, nil
}

// runList seeds cfg.Actuals instances through the API, then times full listings over
// gRPC, straight from the store and raw from Postgres, interleaved so that the three
// see the same machine load.
func runList(ctx context.Context, stack *Stack, clients []*client.Client, cfg Config) (*ListResult, error) {
	lrps := LRPSet(ListDomain, cfg.Actuals, cfg.InstancesPerLRP)
	cfg.progress("seeding %d ActualLRPs (%d LRPs) with %d clients", cfg.Actuals, len(lrps), cfg.Concurrency)
	seed, err := DesireLRPs(ctx, clients, lrps, cfg.Concurrency)
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if cfg.ListRunning > 0 {
		cfg.progress("claiming and starting %d of them", cfg.ListRunning)
		if _, err := ClaimStart(ctx, clients, InstanceKeys(lrps, cfg.ListRunning), cfg.Concurrency); err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
	}
	conn, err := pgx.Connect(ctx, stack.Database.URL)
	if err != nil {
		return nil, fmt.Errorf("raw list: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	lister, all := clients[0], &bbsv1.ListActualLRPsRequest{}
	stream, err := ListActualLRPs(ctx, lister, all, true)
	if err != nil {
		return nil, fmt.Errorf("grpc list: %w", err)
	}
	cfg.progress("listing %d ActualLRPs %d times each over gRPC, from the store and raw from Postgres",
		cfg.Actuals, cfg.ListRuns)
	if cfg.ListProfile != nil {
		if err := pprof.StartCPUProfile(cfg.ListProfile); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	times, err := TimeInterleaved(cfg.ListRuns,
		func() error { return checkRows("grpc list", cfg.Actuals)(ListActualLRPs(ctx, lister, all, false)) },
		func() error { return ListStore(ctx, stack.Store, cfg.Actuals) },
		func() error { return ListPostgres(ctx, conn, cfg.Actuals) },
	)
	if cfg.ListProfile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return nil, err
	}
	res := &ListResult{
		Rows:              cfg.Actuals,
		Running:           cfg.ListRunning,
		Seed:              seed,
		GRPC:              NewListTiming(cfg.Actuals, times[0]),
		Store:             NewListTiming(cfg.Actuals, times[1]),
		Postgres:          NewListTiming(cfg.Actuals, times[2]),
		GoalMS:            ListGoalMS,
		GRPCBatches:       stream.Batches,
		GRPCResponseBytes: stream.Bytes,
	}
	res.GRPCToStoreRatio = Ratio(res.GRPC.Runs.P50MS, res.Store.Runs.P50MS)
	res.GoalMet = res.GRPC.Runs.P50MS < ListGoalMS
	return res, nil
}

// checkRows turns a stream's stats and error into an error that also reports a wrong
// row count.
func checkRows(what string, want int) func(StreamStats, error) error {
	return func(st StreamStats, err error) error {
		if err == nil && st.Rows != want {
			err = fmt.Errorf("%s: %d rows, want %d", what, st.Rows, want)
		}
		return err
	}
}
