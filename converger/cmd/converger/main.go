// Command converger runs the drover converger: it waits for the "converger" lock in
// the BBS, then runs a convergence pass at once and again every repeat interval
// (snapshot, plan, conditional apply, report), and stops after the pass in progress
// on SIGTERM or SIGINT. It exits non-zero when it loses the lock, for its supervisor
// to restart it as a passive instance.
//
// Usage: converger -config converger.json
package main

import (
	"log/slog"
	"os"

	"drover.dev/converger/config"
	"drover.dev/lib/service"
)

func main() {
	os.Exit(service.Run(spec, os.Args[1:], os.Stdout, os.Stderr))
}

// spec describes the converger process to lib/service.
var spec = service.Spec[*config.Config]{
	Name:            "converger",
	DefaultLogLevel: config.DefaultLogLevel,
	Load:            config.Load,
	LogLevel:        func(c *config.Config) string { return c.LogLevel },
	New: func(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (service.Process, error) {
		return newConverger(cfg, logger, level)
	},
}

// StartedAttrs are logged once the converger is ready (it holds the lock).
func (c *converger) StartedAttrs() []any {
	return []any{"owner", c.owner, "debug_address", c.cfg.DebugAddress, "bbs_address", c.cfg.BBSAddress}
}
