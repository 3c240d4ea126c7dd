// Command rep runs a drover cell agent: the in-process executor, the cell's presence in
// the BBS, the drover.rep.v1 gRPC service over mTLS, the harmonizer that keeps the
// containers and the BBS in step, and the debug endpoints. SIGTERM stops it gracefully
// and leaves every container running (a restarted rep adopts them).
//
// Usage: rep -config rep.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/sigmon"

	"drover.dev/lib/logging"
	"drover.dev/rep/config"
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
	flags := flag.NewFlagSet("rep", flag.ContinueOnError)
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
		logger.Error("missing-config-flag", "usage", "rep -config FILE")
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
	logger = logger.With("cell_id", cfg.CellID)
	logger.Info("rep-starting", "config", cfg)

	r, err := newRep(cfg, logger, level)
	if err != nil {
		logger.Error("failed-to-initialize", "error", err.Error())
		return exitFatal
	}
	defer r.close()

	process := ifrit.Background(sigmon.New(r.members()))
	select {
	case <-process.Ready():
		logger.Info("rep-started", "listen_address", cfg.ListenAddress, "advertise_address", cfg.Advertised(), "debug_address", cfg.DebugAddress)
	case err := <-process.Wait():
		if err == nil {
			err = fmt.Errorf("stopped before it was ready")
		}
		logger.Error("rep-failed-to-start", "error", err.Error())
		return exitFatal
	}
	if err := <-process.Wait(); err != nil {
		logger.Error("rep-exited-with-failure", "error", err.Error())
		return exitFatal
	}
	logger.Info("rep-exited")
	return exitOK
}
