// Command stager runs the drover stager: a gRPC StagerService (staging and the
// buildpack list), an HTTPS listener of staging task completion callbacks from the
// BBS, and a debug server; it stops gracefully on SIGTERM or SIGINT.
//
// Usage: stager -config stager.json
package main

import (
	"log/slog"
	"os"

	"drover.dev/lib/service"
	"drover.dev/stager/config"
)

func main() {
	os.Exit(service.Run(spec, os.Args[1:], os.Stdout, os.Stderr))
}

// spec describes the stager process to lib/service.
var spec = service.Spec[*config.Config]{
	Name:            "stager",
	DefaultLogLevel: config.DefaultLogLevel,
	Load:            config.Load,
	LogLevel:        func(c *config.Config) string { return c.LogLevel },
	New: func(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (service.Process, error) {
		return newStager(cfg, logger, level)
	},
}
