// Command auctioneer runs the drover auctioneer: it waits for the "auctioneer" lock in
// the BBS, then auctions the work that arrives on its drover.auctioneer.v1 gRPC API
// (mTLS) onto the cells, and stops gracefully on SIGTERM or SIGINT. It exits non-zero
// when it loses the lock, for its supervisor to restart it as a passive instance.
//
// Usage: auctioneer -config auctioneer.json
package main

import (
	"log/slog"
	"os"

	"drover.dev/auctioneer/config"
	"drover.dev/lib/service"
)

// Exit codes (lib/service's).
const (
	exitOK    = service.ExitOK
	exitFatal = service.ExitFatal
)

func main() {
	os.Exit(service.Run(spec, os.Args[1:], os.Stdout, os.Stderr))
}

// spec describes the auctioneer process to lib/service.
var spec = service.Spec[*config.Config]{
	Name:            "auctioneer",
	DefaultLogLevel: config.DefaultLogLevel,
	Load:            config.Load,
	LogLevel:        func(c *config.Config) string { return c.LogLevel },
	New: func(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (service.Process, error) {
		return newAuctioneer(cfg, logger, level)
	},
}

// StartedAttrs are logged once the auctioneer is ready (it holds the lock).
func (a *auctioneer) StartedAttrs() []any {
	return []any{"listen_address", a.cfg.ListenAddress, "debug_address", a.cfg.DebugAddress, "lock_owner", a.owner}
}
