// Command fileserver runs the drover file server: static lifecycle bundles under
// /v1/static/, signed blob uploads and downloads under /v1/blobs/, resource matching and
// package assembly; /metrics and pprof on the debug address.
//
// Usage: fileserver -config fileserver.json
package main

import (
	"log/slog"
	"os"

	"drover.dev/fileserver/config"
	"drover.dev/lib/service"
)

func main() {
	os.Exit(service.Run(spec, os.Args[1:], os.Stdout, os.Stderr))
}

// spec describes the fileserver process to lib/service.
var spec = service.Spec[*config.Config]{
	Name:            "fileserver",
	DefaultLogLevel: config.DefaultLogLevel,
	Load:            config.Load,
	LogLevel:        func(c *config.Config) string { return c.LogLevel },
	New: func(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (service.Process, error) {
		return newFileserver(cfg, logger, level)
	},
}
