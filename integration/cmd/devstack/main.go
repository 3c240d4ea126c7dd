// Command devstack brings drover's dev stack up and down on this machine:
//
//	devstack up [-replicas N] [-grpc-port P] [-http-port P] [-debug-port P] [-database-url URL]
//	devstack down
//	devstack status
//
// The stack lives in $DROVER_HOME (default .drover of the repository); `up` returns with
// everything running in the background and `down`, from any process, stops it all.
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

	"drover.dev/integration/devstack"
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
	opts := devstack.Options{Logf: logf, Ports: devstack.DefaultPorts}
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	fs.IntVar(&opts.Replicas, "replicas", 1, "number of BBS processes")
	fs.IntVar(&opts.Ports.GRPC, "grpc-port", opts.Ports.GRPC, "gRPC port of the first BBS")
	fs.IntVar(&opts.Ports.HTTP, "http-port", opts.Ports.HTTP, "HTTPS port of the first BBS")
	fs.IntVar(&opts.Ports.Debug, "debug-port", opts.Ports.Debug, "debug port of the first BBS")
	fs.StringVar(&opts.DatabaseURL, "database-url", "", "use this database instead of the private Postgres")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := devstack.Up(ctx, opts)
	if err != nil {
		return fmt.Errorf("%w\n(run `make down` to clean up)", err)
	}
	printWelcome(s)
	return nil
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
		fmt.Printf("%-8s pid %-7d grpc %s  https %s  debug %s  %s\n", st.Name, st.Pid,
			st.BBS.Config.GRPCAddress, st.BBS.Config.HTTPAddress, st.BBS.Config.DebugAddress, state)
	}
	if down > 0 {
		return fmt.Errorf("%d of %d BBS processes are not healthy", down, len(s.BBS))
	}
	return nil
}
