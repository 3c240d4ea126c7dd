// Command bbs runs the drover BBS: it migrates the database, then serves the
// drover.bbs.v1 gRPC API over mTLS, the HTTP/JSON API over HTTPS (mTLS too) and the
// debug endpoints, and stops gracefully on SIGTERM or SIGINT.
//
// Usage: bbs -config bbs.json
package main

import (
	"log/slog"
	"os"

	"drover.dev/bbs/config"
	"drover.dev/lib/service"
)

func main() {
	os.Exit(service.Run(spec, os.Args[1:], os.Stdout, os.Stderr))
}

// spec describes the bbs process to lib/service.
var spec = service.Spec[*config.Config]{
	Name:            "bbs",
	DefaultLogLevel: config.DefaultLogLevel,
	Load:            config.Load,
	LogLevel:        func(c *config.Config) string { return c.LogLevel },
	New: func(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (service.Process, error) {
		return newBBS(cfg, logger, level)
	},
}

// StartedAttrs are logged once the BBS is ready.
func (b *bbs) StartedAttrs() []any {
	return []any{"grpc_address", b.cfg.GRPCAddress, "http_address", b.cfg.HTTPAddress, "debug_address", b.cfg.DebugAddress}
}
