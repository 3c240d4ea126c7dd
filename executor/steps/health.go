package steps

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// DefaultCheckTimeout bounds one declarative check without its own timeout.
const DefaultCheckTimeout = time.Second

// Checker is one health check attempt; nil means it passed.
type Checker interface {
	Check(ctx context.Context) error
}

// CheckerFunc adapts a function to Checker.
type CheckerFunc func(ctx context.Context) error

// Check calls f.
func (f CheckerFunc) Check(ctx context.Context) error { return f(ctx) }

// Probe is a liveness check with its own interval (0 = the schedule's healthy interval).
type Probe struct {
	Checker  Checker
	Interval time.Duration
}

// Health runs a startup check until it passes, then liveness probes until one fails.
type Health struct {
	Schedule Schedule
	Startup  Checker
	Liveness []Probe
	// SkipStartup starts with liveness (an adopted, already healthy container).
	SkipStartup bool
}

// Run returns when health checking ends: ErrCancelled on ctx end, "Instance never
// healthy after <d>: <err>" or "Instance became unhealthy: <err>" otherwise. healthy is
// called once the startup check passed.
func (h *Health) Run(ctx context.Context, healthy func()) error {
	wait := time.Duration(0)
	if !h.SkipStartup {
		var err error
		if wait, err = h.startup(ctx); err != nil {
			return err
		}
	} else if len(h.Liveness) > 0 {
		wait = h.interval(h.Liveness[0])
	}
	signalReady(healthy)
	return h.liveness(ctx, wait)
}

func (h *Health) startup(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	var lastErr error
	for {
		attemptCtx, cancel := ctx, context.CancelFunc(func() {})
		if d := h.Schedule.AttemptDeadline(time.Since(start)); d > 0 {
			attemptCtx, cancel = context.WithTimeout(ctx, d)
		}
		err := h.Startup.Check(attemptCtx)
		interrupted := attemptCtx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return 0, ErrCancelled
		}
		if err != nil && !(interrupted && lastErr != nil) {
			lastErr = err
		}
		d := h.Schedule.Next(Startup, err == nil, time.Since(start))
		switch d.Outcome {
		case BecameHealthy:
			return d.Wait, nil
		case NeverHealthy:
			return 0, emittable(lastErr, "Instance never healthy after %s: %s", h.Schedule.StartTimeout, lastErr)
		}
		if !sleep(ctx, d.Wait) {
			return 0, ErrCancelled
		}
	}
}

func (h *Health) interval(p Probe) time.Duration {
	if p.Interval > 0 {
		return p.Interval
	}
	return h.Schedule.HealthyInterval
}

// liveness runs every probe on its own interval until one fails or ctx ends.
func (h *Health) liveness(ctx context.Context, firstWait time.Duration) error {
	if len(h.Liveness) == 0 {
		<-ctx.Done()
		return ErrCancelled
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan error, len(h.Liveness))
	for _, p := range h.Liveness {
		go func() { results <- h.probe(inner, p, firstWait) }()
	}
	first := <-results
	cancel()
	for range len(h.Liveness) - 1 {
		<-results
	}
	if ctx.Err() != nil {
		return ErrCancelled
	}
	return first
}

func (h *Health) probe(ctx context.Context, p Probe, wait time.Duration) error {
	if p.Interval > 0 {
		wait = p.Interval
	}
	for {
		if !sleep(ctx, wait) {
			return ErrCancelled
		}
		err := p.Checker.Check(ctx)
		if ctx.Err() != nil {
			return ErrCancelled
		}
		d := h.Schedule.Next(Liveness, err == nil, 0)
		if d.Outcome == BecameUnhealthy {
			return emittable(err, "Instance became unhealthy: %s", err)
		}
		wait = h.interval(p)
	}
}

// sleep waits d or until ctx ends; it reports whether the full wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// MonitorChecker runs the monitor action tree once per attempt, each time built with
// fresh process IDs ("<prefix>-<n>"); output and exit-status lines are not logged.
func MonitorChecker(monitor *modelsv1.Action, deps Deps, prefix string) (Checker, error) {
	deps.SuppressExitStatus = true
	deps.Reattach = false
	deps.Logs = nil
	if _, err := Build(monitor, &deps, prefix); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	n := 0
	return CheckerFunc(func(ctx context.Context) error {
		mu.Lock()
		n++
		id := prefix + "-" + strconv.Itoa(n)
		mu.Unlock()
		step, err := Build(monitor, &deps, id)
		if err != nil {
			return err
		}
		return step.Run(ctx, nil)
	}), nil
}

// RuntimeCheck is one declarative check run through Runtime.Check; its error names the
// check ("tcp check on port 8080 failed: ...").
func RuntimeCheck(rt executor.Runtime, guid string, check *modelsv1.Check) Checker {
	return CheckerFunc(func(ctx context.Context) error {
		timeout, what := checkTimeoutAndName(check)
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := rt.Check(ctx, guid, check); err != nil {
			return fmt.Errorf("%s failed: %w", what, err)
		}
		return nil
	})
}

func checkTimeoutAndName(c *modelsv1.Check) (time.Duration, string) {
	ms, what := uint64(0), "health check"
	switch {
	case c.GetHttpCheck() != nil:
		h := c.GetHttpCheck()
		path := h.GetPath()
		if path == "" {
			path = "/"
		}
		ms, what = h.GetRequestTimeoutMs(), fmt.Sprintf("http check on port %d path %s", h.GetPort(), path)
	case c.GetTcpCheck() != nil:
		ms, what = c.GetTcpCheck().GetConnectTimeoutMs(), fmt.Sprintf("tcp check on port %d", c.GetTcpCheck().GetPort())
	}
	if ms == 0 {
		return DefaultCheckTimeout, what
	}
	return time.Duration(ms) * time.Millisecond, what
}

func checkInterval(c *modelsv1.Check) time.Duration {
	ms := c.GetHttpCheck().GetIntervalMs()
	if c.GetTcpCheck() != nil {
		ms = c.GetTcpCheck().GetIntervalMs()
	}
	return time.Duration(ms) * time.Millisecond
}

// CheckDefinitionHealth returns the startup checker (all checks must pass; the error
// says "health check never passed: ...") and the liveness probes (any failure crashes;
// "health check failed: ...") of a check definition.
func CheckDefinitionHealth(rt executor.Runtime, guid string, def *modelsv1.CheckDefinition) (Checker, []Probe, error) {
	checks := def.GetChecks()
	if len(checks) == 0 {
		return nil, nil, fmt.Errorf("%w: check_definition.checks must not be empty", executor.ErrStepsInvalid)
	}
	checkers := make([]Checker, len(checks))
	probes := make([]Probe, len(checks))
	for i, c := range checks {
		if (c.GetTcpCheck() == nil) == (c.GetHttpCheck() == nil) {
			return nil, nil, fmt.Errorf("%w: check_definition.checks[%d]: exactly one of tcp_check and http_check must be set", executor.ErrStepsInvalid, i)
		}
		checkers[i] = RuntimeCheck(rt, guid, c)
		failed := checkers[i]
		probes[i] = Probe{Interval: checkInterval(c), Checker: CheckerFunc(func(ctx context.Context) error {
			if err := failed.Check(ctx); err != nil {
				return fmt.Errorf("health check failed: %w", err)
			}
			return nil
		})}
	}
	startup := CheckerFunc(func(ctx context.Context) error {
		errs := make([]error, len(checkers))
		var wg sync.WaitGroup
		for i, c := range checkers {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = c.Check(ctx) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("health check never passed: %w", aggregate(errs))
		}
		return nil
	})
	return startup, probes, nil
}
