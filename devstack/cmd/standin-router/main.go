// Command standin-router is a small stand-in for gorouter (see package router): it
// keeps the route table from router.register / router.unregister on NATS, answers
// router.greet, announces router.start, and proxies HTTP by Host header.
//
//	standin-router [-config FILE]
//
// The configuration is router.Config as JSON; without -config the defaults apply (NATS
// at nats://127.0.0.1:4222, proxy 127.0.0.1:8081, admin 127.0.0.1:8082).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"

	"drover.dev/devstack/router"
)

func main() {
	configPath := flag.String("config", "", "JSON configuration `FILE` (router.Config)")
	flag.Parse()
	if err := run(*configPath); err != nil {
		fmt.Fprintln(os.Stderr, "standin-router:", err)
		os.Exit(1)
	}
}

func run(configPath string) error {
	cfg := router.DefaultConfig()
	if configPath != "" {
		loaded, err := libconfig.LoadOver(configPath, cfg)
		if err != nil {
			return err
		}
		cfg = *loaded
	}
	logger, _, err := logging.New(os.Stdout, cfg.LogLevel)
	if err != nil {
		return err
	}
	r, err := router.Start(cfg, logger)
	if err != nil {
		return err
	}
	logger.Info("standin-router-started", "listen_address", r.Addr(), "admin_address", r.AdminAddr(),
		"nats_addresses", cfg.NATSAddresses, "register_interval", cfg.RegisterInterval.String(),
		"prune_threshold", cfg.PruneThreshold.String())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	sig := <-signals
	logger.Info("standin-router-stopping", "signal", sig.String())
	r.Close()
	return nil
}
