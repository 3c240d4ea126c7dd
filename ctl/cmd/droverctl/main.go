// Command droverctl is the drover operator CLI (what cfdot is for Diego). It talks
// to the BBS over mutual TLS; run "droverctl help" for its commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"drover.dev/ctl/commands"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := commands.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, commands.OSEnv())
	stop()
	os.Exit(code)
}
