// Command rep runs a drover cell agent: the in-process executor, the cell's presence in
// the BBS, the drover.rep.v1 gRPC service over mTLS, the harmonizer that keeps the
// containers and the BBS in step, and the debug endpoints. SIGTERM stops it gracefully
// and leaves every container running (a restarted rep adopts them); with
// evacuate_on_sigterm, or after the Evacuate RPC, it drains the cell first (hands its
// instances over to other cells) and then exits 0.
//
// Usage: rep -config rep.json
package main

import (
	"log/slog"
	"os"

	"drover.dev/lib/service"
	"drover.dev/rep/config"
)

func main() {
	os.Exit(service.Run(spec, os.Args[1:], os.Stdout, os.Stderr))
}

// spec describes the rep process to lib/service.
var spec = service.Spec[*config.Config]{
	Name:            "rep",
	DefaultLogLevel: config.DefaultLogLevel,
	Load:            config.Load,
	LogLevel:        func(c *config.Config) string { return c.LogLevel },
	LogAttrs:        func(c *config.Config) []any { return []any{"cell_id", c.CellID} },
	New: func(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (service.Process, error) {
		return newRep(cfg, logger, level)
	},
}

// StartedAttrs are logged once the rep is ready.
func (r *rep) StartedAttrs() []any {
	return []any{"listen_address", r.cfg.ListenAddress, "advertise_address", r.cfg.Advertised(), "debug_address", r.cfg.DebugAddress}
}
