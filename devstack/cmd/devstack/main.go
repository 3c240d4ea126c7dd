// Command devstack is the launcher behind `make up`, `make down` and `make status`: it
// brings drover's dev stack up and down on this machine (package devstack):
//
//	devstack up [-hosts N] [-cells N] [-replicas N] [-grpc-port P] [-http-port P] [-debug-port P]
//	            [-rep-port P] [-auctioneer-port P] [-auctioneer-debug-port P] [-converger-debug-port P]
//	            [-router-port P] [-router-admin-port P] [-route-emitter-port P]
//	            [-route-emitter-debug-port P] [-fileserver-port P] [-fileserver-debug-port P]
//	            [-registry-port P] [-registry-tls-port P]
//	            [-database-url URL]
//	devstack down
//	devstack status
//
// The stack lives in $DROVER_HOME (default .drover of the repository); `up` returns with
// everything running in the background and `down`, from any process, stops it all.
// `up` over a running stack keeps what runs: -cells N adds or removes cells without
// touching the others, and any other flag that differs from what runs is refused.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"drover.dev/devstack"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, os.Args[2:])
	case "down":
		err = down(ctx)
	case "status":
		err = status(ctx)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: devstack up [flags] | down | status")
	os.Exit(2)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "devstack: "+format+"\n", args...) }

func up(ctx context.Context, args []string) error {
	opts, err := parseUp(args, flag.ExitOnError)
	if err != nil {
		return err
	}
	opts.Logf = logf
	s, err := devstack.Up(ctx, opts)
	if errors.Is(err, devstack.ErrRunningStack) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w\n(run `make down` to clean up)", err)
	}
	printWelcome(s)
	return nil
}

// parseUp turns `devstack up`'s flags into Options: a flag not given stays zero (the
// default for a new stack, what runs for a running one); -cells 0 asks for none.
func parseUp(args []string, onError flag.ErrorHandling) (devstack.Options, error) {
	opts := devstack.Options{Ports: devstack.DefaultPorts}
	fs := flag.NewFlagSet("up", onError)
	fs.IntVar(&opts.Replicas, "replicas", 1, "number of BBS processes")
	fs.IntVar(&opts.Ports.GRPC, "grpc-port", opts.Ports.GRPC, "gRPC port of the first BBS")
	fs.IntVar(&opts.Ports.HTTP, "http-port", opts.Ports.HTTP, "HTTPS port of the first BBS")
	fs.IntVar(&opts.Ports.Debug, "debug-port", opts.Ports.Debug, "debug port of the first BBS")
	fs.IntVar(&opts.Hosts, "hosts", 0, fmt.Sprintf("run on a test network: this many cell hosts (at most %d) plus control, router and client hosts, each a network namespace of its own; 0: one host", devstack.MaxDevCells)) // multihost
	fs.IntVar(&opts.Cells, "cells", 1, fmt.Sprintf("number of cells (reps), at most %d; 0 for none", devstack.MaxDevCells))
	fs.IntVar(&opts.RepPort, "rep-port", devstack.DefaultRepPort, "gRPC port of cell-1's rep (cell i: +10*(i-1), debug +1)")
	fs.IntVar(&opts.AuctioneerPorts.GRPC, "auctioneer-port", devstack.DefaultAuctioneerPorts.GRPC, "gRPC port of the auctioneer")
	fs.IntVar(&opts.AuctioneerPorts.Debug, "auctioneer-debug-port", devstack.DefaultAuctioneerPorts.Debug, "debug port of the auctioneer")
	fs.IntVar(&opts.ConvergerDebugPort, "converger-debug-port", devstack.DefaultConvergerDebugPort, "debug port of the converger (runs with cells)")
	fs.IntVar(&opts.RouterPorts.HTTP, "router-port", devstack.DefaultRouterPorts.HTTP, "HTTP port of the stand-in router (runs with cells)")
	fs.IntVar(&opts.RouterPorts.Admin, "router-admin-port", devstack.DefaultRouterPorts.Admin, "admin port of the stand-in router (GET /routes)")
	fs.IntVar(&opts.RouteEmitterPorts.GRPC, "route-emitter-port", devstack.DefaultRouteEmitterPorts.GRPC, "gRPC port of the route-emitter")
	fs.IntVar(&opts.RouteEmitterPorts.Debug, "route-emitter-debug-port", devstack.DefaultRouteEmitterPorts.Debug, "debug port of the route-emitter")
	fs.IntVar(&opts.FileserverPorts.HTTP, "fileserver-port", devstack.DefaultFileserverPorts.HTTP, "HTTP port of the fileserver (runs with cells)")
	fs.IntVar(&opts.FileserverPorts.Debug, "fileserver-debug-port", devstack.DefaultFileserverPorts.Debug, "debug port of the fileserver")
	fs.IntVar(&opts.RegistryPorts.Plain, "registry-port", devstack.DefaultRegistryPorts.Plain, "port of the plain HTTP registry (runs with cells)")
	fs.IntVar(&opts.RegistryPorts.TLS, "registry-tls-port", devstack.DefaultRegistryPorts.TLS, "port of the TLS registry with basic auth (runs with cells)")
	fs.StringVar(&opts.DatabaseURL, "database-url", "", "use this database instead of the private Postgres")
	if err := fs.Parse(args); err != nil {
		return devstack.Options{}, err
	}
	if fs.NArg() > 0 {
		return devstack.Options{}, fmt.Errorf("up: unexpected arguments %q (flags only; see devstack up -h)", fs.Args())
	}
	unsetToZero(fs)
	if opts.Cells == 0 && given(fs, "cells") {
		opts.Cells = -1 // Options: negative means none
	}
	return opts, nil
}

// unsetToZero zeroes every flag not given on the command line: devstack.Options then
// takes its defaults for a new stack and keeps what a running stack runs with, and
// refuses only what was asked for.
func unsetToZero(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if !given(fs, f.Name) && f.DefValue != "" {
			_ = f.Value.Set("0")
		}
	})
}

// given reports whether the flag was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func down(ctx context.Context) error {
	root, err := devstack.FindRoot()
	if err != nil {
		return err
	}
	home := devstack.DefaultHome(root)
	if err := devstack.DownHome(ctx, root, home); err != nil {
		return err
	}
	logf("dev stack in %s is down", home)
	return nil
}

func status(ctx context.Context) error {
	root, err := devstack.FindRoot()
	if err != nil {
		return err
	}
	s, err := devstack.Load(devstack.DefaultHome(root))
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Println("dev stack is down")
		return nil
	}
	if err != nil {
		return err
	}
	down := 0
	for _, st := range s.Status(ctx) {
		state := "SERVING"
		if st.Unhealthy != nil {
			state = st.Unhealthy.Error()
			down++
		}
		fmt.Printf("%-12s pid %-7d %s  %s\n", st.Name, st.Pid, st.Addresses, state)
	}
	if down > 0 {
		if down == 1 {
			return errors.New("1 process of the dev stack is not healthy")
		}
		return fmt.Errorf("%d processes of the dev stack are not healthy", down)
	}
	return nil
}
