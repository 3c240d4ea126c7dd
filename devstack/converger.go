package devstack

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"drover.dev/bbs/client"
	convergerconfig "drover.dev/converger/config"
	libconfig "drover.dev/lib/config"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// ConvergerBinary is the converger's program.
var ConvergerBinary = Binary{Name: "converger", Package: "./converger/cmd/converger"}

// Converger intervals of the stacks.
const (
	// DevConvergeInterval is the dev stack's repeat_interval.
	DevConvergeInterval = 5 * time.Second
	// convergerLockOwner is the lock owner every stack's converger uses, so that Healthy
	// can tell it holds the lock.
	convergerLockOwner = "devstack-converger"
)

// DefaultConvergerDebugPort is the dev stack's converger debug port.
const DefaultConvergerDebugPort = 9020

// Converger is the stack's converger: a Service with its configuration.
type Converger struct {
	Service
	Config convergerconfig.Config `json:"config"`
	Certs  Certs                  `json:"certs"`
}

// DebugURL is the base URL of the converger's debug server (/metrics).
func (c *Converger) DebugURL() string { return "http://" + c.Config.DebugAddress }

// Start writes the configuration, starts the converger and waits until it is Healthy.
func (c *Converger) Start(ctx context.Context) error {
	return c.start(ctx, c.Config, ComponentStartTimeout, c.Healthy)
}

// Restart stops the converger if it runs and starts it again.
func (c *Converger) Restart(ctx context.Context) error {
	if err := c.Stop(ctx); err != nil {
		return err
	}
	return c.Start(ctx)
}

// Healthy reports whether the converger is ready: its debug server answers and it holds
// the converger lock (the BBS's status names its lock owner).
func (c *Converger) Healthy(ctx context.Context) error {
	if err := checkHTTP(ctx, c.DebugURL()+"/healthz"); err != nil {
		return err
	}
	owner, err := c.lockOwner(ctx)
	switch {
	case err != nil:
		return err
	case owner != c.Config.LockOwner:
		return fmt.Errorf("the converger lock is held by %q, not %q", owner, c.Config.LockOwner)
	}
	return nil
}

// lockOwner asks the BBS who holds the converger lock.
func (c *Converger) lockOwner(ctx context.Context) (string, error) {
	tlsConf, err := c.Certs.ClientTLS()
	if err != nil {
		return "", err
	}
	bbs, err := client.New(c.Config.BBSAddress, tlsConf)
	if err != nil {
		return "", err
	}
	defer bbs.Close()
	ctx, cancel := context.WithTimeout(ctx, healthAttemptTimeout)
	defer cancel()
	resp, err := bbs.GetConvergerStatus(ctx, &bbsv1.GetConvergerStatusRequest{})
	if err != nil {
		return "", err
	}
	return resp.GetLockOwner(), nil
}

// AddConverger describes the stack's converger, talking to the first BBS (call it after
// AddBBS), its debug server on debugPort, converging every interval.
func (s *Stack) AddConverger(debugPort int, interval time.Duration, detached bool) *Converger {
	cfg := convergerconfig.Default()
	cfg.DebugAddress = "127.0.0.1:" + strconv.Itoa(debugPort)
	cfg.BBSAddress = s.BBS[0].GRPCAddress()
	cfg.TLS = s.Certs.Converger()
	cfg.RepeatInterval = libconfig.Duration(interval)
	cfg.LockOwner = convergerLockOwner
	c := &Converger{Config: cfg, Certs: s.Certs}
	s.describe(&c.Service, "converger", ConvergerBinary, detached)
	s.Converger = c
	return c
}
