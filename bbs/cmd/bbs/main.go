// Command bbs runs the drover BBS: it migrates the database, then serves the
// drover.bbs.v1 gRPC API over mTLS, the HTTP/JSON API over HTTPS (mTLS too) and the
// debug endpoints, and stops gracefully on SIGTERM or SIGINT.
//
// Usage: bbs -config bbs.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/sigmon"

	"drover.dev/bbs/config"
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
	flags := flag.NewFlagSet("bbs", flag.ContinueOnError)
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
		logger.Error("missing-config-flag", "usage", "bbs -config FILE")
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
	logger.Info("bbs-starting", "config", cfg)

	b, err := newBBS(cfg, logger, level)
	if err != nil {
		logger.Error("failed-to-initialize", "error", err.Error())
		return exitFatal
	}
	defer b.close()

	process := ifrit.Background(sigmon.New(b.members()))
	select {
	case <-process.Ready():
		logger.Info("bbs-started",
			"grpc_address", cfg.GRPCAddress,
			"http_address", cfg.HTTPAddress,
			"debug_address", cfg.DebugAddress,
		)
	case err := <-process.Wait():
		if err == nil {
			err = fmt.Errorf("stopped before it was ready")
		}
		logger.Error("bbs-failed-to-start", "error", err.Error())
		return exitFatal
	}

	if err := <-process.Wait(); err != nil {
		logger.Error("bbs-exited-with-failure", "error", err.Error())
		return exitFatal
	}
	logger.Info("bbs-exited")
	return exitOK
}
