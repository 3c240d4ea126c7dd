// Command bbsbench benchmarks the BBS: it starts the real store, event hub and gRPC
// server (mutual TLS on 127.0.0.1) in-process on a fresh Postgres database, drives them
// through the Go client and prints rates and latency percentiles for desiring LRPs,
// listing every ActualLRP and claim+start round trips. The database is dropped at the
// end.
//
//	go run ./integration/bench/cmd/bbsbench [-json] [-lrps 10000] [-actuals 100000] ...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"drover.dev/integration/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bbsbench:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	cfg        bench.Config
	adminURL   string
	scenarios  string
	jsonOut    bool
	cpuProfile string
	logLevel   slog.Level
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bbsbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.adminURL, "db", bench.DefaultAdminURL(), "admin `URL` of a Postgres role that may create databases")
	fs.IntVar(&o.cfg.LRPs, "lrps", 10000, "LRPs to desire (1 instance each)")
	fs.IntVar(&o.cfg.Actuals, "actuals", 100000, "ActualLRPs to seed and list")
	fs.IntVar(&o.cfg.InstancesPerLRP, "instances-per-lrp", 100, "instances per LRP when seeding ActualLRPs")
	fs.IntVar(&o.cfg.Claims, "claims", 2000, "instances to claim and start")
	fs.IntVar(&o.cfg.Concurrency, "concurrency", 16, "concurrent clients, each with its own connection")
	fs.IntVar(&o.cfg.ListRuns, "list-runs", 5, "timed full listings, over gRPC and from the store")
	fs.IntVar(&o.cfg.ListRunning, "list-running", 0, "seeded ActualLRPs to claim and start before listing (the rest stay UNCLAIMED)")
	fs.IntVar(&o.cfg.MaxConns, "max-conns", bench.DefaultMaxConns, "store connection pool size")
	fs.StringVar(&o.scenarios, "scenarios", "desire,list,claim", "comma-separated scenarios to run")
	fs.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the timed gRPC listings to `file`")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelWarn, "level of the BBS's JSON logs on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for s := range strings.SplitSeq(o.scenarios, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.cfg.Scenarios = append(o.cfg.Scenarios, s)
		}
	}
	if len(o.cfg.Scenarios) == 0 {
		return nil, errors.New("-scenarios names none")
	}
	return o, o.cfg.Validate()
}

func run(args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.cfg.Progress = stderr
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		o.cfg.ListProfile = f
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	stack, err := bench.StartStack(ctx, bench.StackConfig{AdminURL: o.adminURL, MaxConns: o.cfg.MaxConns, Logger: logger})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stack.Close()) }()
	fmt.Fprintf(stderr, "bbs on %s, database %s\n", stack.Address, stack.Database.Name)
	report, err := bench.Run(ctx, stack, o.cfg)
	if err != nil {
		return err
	}
	if o.jsonOut {
		return report.WriteJSON(stdout)
	}
	return report.WriteText(stdout)
}
