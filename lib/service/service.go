// Package service is the main function every drover process shares: the -config flag,
// the JSON logger, loading and validating the configuration, the ordered start of the
// process's ifrit members under a signal monitor, and the exit codes.
package service

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/sigmon"

	"drover.dev/lib/logging"
)

// Exit codes of a drover process.
const (
	ExitOK    = 0
	ExitFatal = 1
	ExitUsage = 2
)

// Process is a built, not yet started, drover process.
type Process interface {
	// Members is the ordered group to run (started in order, stopped in reverse).
	Members() ifrit.Runner
	// StartedAttrs are logged with "<name>-started" once every member is ready.
	StartedAttrs() []any
	// Close releases what building the process opened (clients, pools).
	Close()
}

// Spec describes one kind of process.
type Spec[C any] struct {
	// Name is the program's name (logs: "<name>-starting", "<name>-started", ...).
	Name string
	// DefaultLogLevel is used until the configuration is read.
	DefaultLogLevel string
	// Load reads and validates the configuration file.
	Load func(path string) (C, error)
	// LogLevel is the configured level.
	LogLevel func(C) string
	// LogAttrs, when set, are added to every log line once the configuration is read.
	LogAttrs func(C) []any
	// New builds the process.
	New func(cfg C, logger *slog.Logger, level *slog.LevelVar) (Process, error)
}

// Run is the whole process: it parses args, logs JSON lines to stdout, runs the
// process until SIGTERM or SIGINT (or a member fails) and returns the exit code.
func Run[C any](spec Spec[C], args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet(spec.Name, flag.ContinueOnError)
	flags.SetOutput(stderr)
	configPath := flags.String("config", "", "path to the JSON configuration file (required)")
	if err := flags.Parse(args); err != nil {
		return ExitUsage
	}

	logger, level, err := logging.New(stdout, spec.DefaultLogLevel)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFatal
	}
	if *configPath == "" {
		logger.Error("missing-config-flag", "usage", spec.Name+" -config FILE")
		return ExitUsage
	}
	cfg, err := spec.Load(*configPath)
	if err != nil {
		logger.Error("invalid-config", "error", err.Error())
		return ExitFatal
	}
	if parsed, err := logging.ParseLevel(spec.LogLevel(cfg)); err == nil {
		level.Set(parsed)
	}
	if spec.LogAttrs != nil {
		logger = logger.With(spec.LogAttrs(cfg)...)
	}
	logger.Info(spec.Name+"-starting", "config", cfg)

	p, err := spec.New(cfg, logger, level)
	if err != nil {
		logger.Error("failed-to-initialize", "error", err.Error())
		return ExitFatal
	}
	defer p.Close()

	process := ifrit.Background(sigmon.New(p.Members()))
	select {
	case <-process.Ready():
		logger.Info(spec.Name+"-started", p.StartedAttrs()...)
	case err := <-process.Wait():
		if err == nil {
			err = errors.New("stopped before it was ready")
		}
		logger.Error(spec.Name+"-failed-to-start", "error", err.Error())
		return ExitFatal
	}

	if err := <-process.Wait(); err != nil {
		logger.Error(spec.Name+"-exited-with-failure", "error", err.Error())
		return ExitFatal
	}
	logger.Info(spec.Name + "-exited")
	return ExitOK
}
