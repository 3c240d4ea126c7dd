// Command route-emitter runs the drover route-emitter: it keeps the routing table of
// RUNNING routed instances from the BBS event stream and full syncs, and publishes it to
// gorouter over NATS. In global mode (no cell_id) only the holder of the
// "route_emitter" lock emits; standbys keep NATS connected and wait. In local mode
// (cell_id set) it serves one cell without a lock.
//
// Usage: route-emitter -config route-emitter.json
package main

import (
	"log/slog"
	"os"

	"drover.dev/lib/service"
	"drover.dev/route-emitter/config"
)

func main() {
	os.Exit(service.Run(spec, os.Args[1:], os.Stdout, os.Stderr))
}

// spec describes the route-emitter process to lib/service.
var spec = service.Spec[*config.Config]{
	Name:            "route-emitter",
	DefaultLogLevel: config.DefaultLogLevel,
	Load:            config.Load,
	LogLevel:        func(c *config.Config) string { return c.LogLevel },
	New: func(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (service.Process, error) {
		return newRouteEmitter(cfg, logger, level)
	},
}
