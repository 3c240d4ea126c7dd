// Command builder stages an app with buildpacks inside a staging container (see package
// drover.dev/lifecycle/builder for the contract). It exits 0 when staged, else with the
// builder's failure status (222 none detected, 223 build, 224 release, 225 write).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"drover.dev/lifecycle/builder"
)

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("builder", flag.ContinueOnError)
	var cfg builder.Config
	var order string
	fs.StringVar(&cfg.AppDir, "app", "/tmp/app", "the app directory, built in place")
	fs.StringVar(&cfg.BuildpacksDir, "buildpacks", "/tmp/buildpacks", "directory with one folder per buildpack")
	fs.StringVar(&order, "order", "", "buildpack names, comma-separated, in order")
	fs.BoolVar(&cfg.SkipDetect, "skip-detect", false, "run all -order buildpacks as a supply chain (the last one final)")
	fs.StringVar(&cfg.CacheDir, "cache", "/tmp/cache", "build cache directory")
	fs.StringVar(&cfg.DepsDir, "deps", "/tmp/deps", "DEPS_DIR for supply buildpacks")
	fs.StringVar(&cfg.DropletPath, "droplet", "/tmp/droplet.tgz", "droplet to write")
	fs.StringVar(&cfg.OutputCachePath, "output-cache", "/tmp/output-cache.tgz", "build cache archive to write")
	fs.StringVar(&cfg.ResultPath, "result", "/tmp/result.json", "staging result to write")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return builder.ExitSetup
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "builder: unexpected arguments %q\n", fs.Args())
		return builder.ExitSetup
	}
	var err error
	if cfg.Order, err = builder.ParseOrder(order); err != nil {
		fmt.Fprintf(os.Stderr, "builder: %v\n", err)
		return builder.ExitSetup
	}
	cfg.Env, cfg.Stdout, cfg.Stderr = os.Environ(), os.Stdout, os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if _, err := builder.Build(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "builder: %v\n", err)
		var be *builder.Error
		if errors.As(err, &be) {
			return be.Code
		}
		return builder.ExitSetup
	}
	return 0
}
