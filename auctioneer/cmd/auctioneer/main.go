// Command auctioneer runs the drover auctioneer: it waits for the "auctioneer" lock in
// the BBS, then auctions the work that arrives on its drover.auctioneer.v1 gRPC API
// (mTLS) onto the cells, and stops gracefully on SIGTERM or SIGINT. It exits non-zero
// when it loses the lock, for its supervisor to restart it as a passive instance.
//
// Usage: auctioneer -config auctioneer.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/sigmon"

	"drover.dev/auctioneer/config"
	"drover.dev/lib/logging"
)

// Exit codes.
const (
	exitOK    = 0
	exitFatal = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("auctioneer", flag.ContinueOnError)
	flags.SetOutput(stderr)
	configPath := flags.String("config", "", "path to the JSON configuration file (required)")
	if err := flags.Parse(args); err != nil {
		return exitUsage
	}

	logger, level, err := logging.New(stdout, config.DefaultLogLevel)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFatal
	}
	if *configPath == "" {
		logger.Error("missing-config-flag", "usage", "auctioneer -config FILE")
		return exitUsage
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		logger.Error("invalid-config", "error", err.Error())
		return exitFatal
	}
	if parsed, err := logging.ParseLevel(cfg.LogLevel); err == nil {
		level.Set(parsed)
	}
	logger.Info("auctioneer-starting", "config", cfg)

	a, err := newAuctioneer(cfg, logger, level)
	if err != nil {
		logger.Error("failed-to-initialize", "error", err.Error())
		return exitFatal
	}
	defer a.close()

	process := ifrit.Background(sigmon.New(a.members()))
	select {
	case <-process.Ready():
		logger.Info("auctioneer-started",
			"listen_address", cfg.ListenAddress,
			"debug_address", cfg.DebugAddress,
			"lock_owner", a.owner,
		)
	case err := <-process.Wait():
		if err == nil {
			err = fmt.Errorf("stopped before it was ready")
		}
		logger.Error("auctioneer-failed-to-start", "error", err.Error())
		return exitFatal
	}

	if err := <-process.Wait(); err != nil {
		logger.Error("auctioneer-exited-with-failure", "error", err.Error())
		return exitFatal
	}
	logger.Info("auctioneer-exited")
	return exitOK
}
