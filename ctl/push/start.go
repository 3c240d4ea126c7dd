package push

import (
	"context"
	"fmt"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// InstanceCount is how many of an LRP's wanted indices run, and the first crash.
type InstanceCount struct {
	Running int32
	// Crashed is the lowest-index instance that crashed (state CRASHED or a crash
	// count), nil when none did.
	Crashed *modelsv1.ActualLRP
}

// CountInstances looks at the ordinary instances of indices below want.
func CountInstances(actuals []*modelsv1.ActualLRP, want int32) InstanceCount {
	var c InstanceCount
	running := map[int32]bool{}
	for _, a := range actuals {
		if a.GetIndex() >= want || a.GetPresence() > modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY {
			continue
		}
		if a.GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING && a.GetCrashCount() == 0 {
			running[a.GetIndex()] = true
		}
		crashed := a.GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED || a.GetCrashCount() > 0
		if crashed && (c.Crashed == nil || a.GetIndex() < c.Crashed.GetIndex()) {
			c.Crashed = a
		}
	}
	c.Running = int32(len(running))
	return c
}

// waitRunning polls the LRP's instances until want of them are RUNNING, printing each
// change of the count once. A crash or the timeout fails it.
func (p *pusher) waitRunning(ctx context.Context, guid string, want int32, timeout time.Duration) error {
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	followers := map[int32]*logFollower{}
	defer func() {
		for _, f := range followers {
			f.stop()
		}
	}()
	last := int32(-1)
	for {
		actuals, err := p.BBS.ActualLRPs(ctx, guid)
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("instances of %s: %w", guid, err)
		}
		if err == nil {
			p.followInstances(ctx, guid, actuals, want, followers)
			count := CountInstances(actuals, want)
			if count.Running != last {
				last = count.Running
				p.out.printf("%d of %d instances running", count.Running, want)
			}
			if c := count.Crashed; c != nil {
				if f := followers[c.GetIndex()]; f != nil {
					f.drain() // the app's last words, before the error
				}
				return fmt.Errorf("start failed: instance %d crashed: %s", c.GetIndex(), orUnknown(c.GetCrashReason()))
			}
			if count.Running >= want {
				return nil
			}
		}
		if err := p.sleep(ctx); err != nil {
			return fmt.Errorf("start failed: %d of %d instances of %s running after %s (--timeout): %w", max(last, 0), want, guid, timeout, err)
		}
	}
}

// followInstances starts printing the lines of every placed instance below want that
// has no follower yet, so that an app's own output shows while it starts.
func (p *pusher) followInstances(ctx context.Context, guid string, actuals []*modelsv1.ActualLRP, want int32, followers map[int32]*logFollower) {
	if p.Logs == nil {
		return
	}
	for _, a := range actuals {
		index, cellID := a.GetIndex(), a.GetCellId()
		if index >= want || cellID == "" || followers[index] != nil ||
			a.GetPresence() > modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY {
			continue
		}
		f := &logFollower{out: p.out, source: AppLogSource}
		followers[index] = f
		f.start(ctx, fmt.Sprintf("logs of instance %d", index), func(ctx context.Context, emit func([]*repv1.LogLine)) error {
			return p.Logs.FollowInstance(ctx, guid, index, cellID, emit)
		})
	}
}

// rollout replaces the older versions once the new one runs: their routes are
// cleared, the route-emitter is watched until it routes only the new version, then
// they are removed.
func (p *pusher) rollout(ctx context.Context, guid string, olds []string, timeout time.Duration) ([]string, error) {
	if len(olds) == 0 {
		return nil, nil
	}
	for _, old := range olds {
		p.out.printf("Unrouting old version %s", old)
		if err := p.BBS.UpdateDesiredLRP(ctx, old, &modelsv1.DesiredLRPUpdate{ClearRoutes: true}); err != nil {
			return nil, fmt.Errorf("unrouting %s: %w", old, err)
		}
	}
	p.waitRouted(ctx, guid, olds, timeout)
	var removed []string
	for _, old := range olds {
		if err := p.BBS.RemoveDesiredLRP(ctx, old); err != nil && models.FromError(err).Type != models.ErrTypeResourceNotFound {
			return removed, fmt.Errorf("removing old version %s: %w", old, err)
		}
		p.out.printf("Removed old version %s", old)
		removed = append(removed, old)
	}
	return removed, nil
}

// waitRouted polls the route-emitter until it lists an endpoint of guid and none of
// olds. An unreachable route-emitter or the timeout only warns: the old versions have
// no routes any more, so removing them cannot take traffic away.
func (p *pusher) waitRouted(ctx context.Context, guid string, olds []string, timeout time.Duration) {
	if p.Routes == nil {
		p.out.printf("warning: no route-emitter to ask: not waiting for the routers")
		return
	}
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	for {
		done, err := p.routedOnlyTo(ctx, guid, olds)
		if err != nil {
			p.out.printf("warning: route-emitter: %v: not waiting for the routers", err)
			return
		}
		if done {
			p.out.printf("Routers send traffic to %s only", guid)
			return
		}
		if err := p.sleep(ctx); err != nil {
			p.out.printf("warning: the route-emitter still routes an old version after %s: removing it anyway", timeout)
			return
		}
	}
}

// routedOnlyTo reports whether guid has an endpoint and olds have none.
func (p *pusher) routedOnlyTo(ctx context.Context, guid string, olds []string) (bool, error) {
	for i, pg := range append([]string{guid}, olds...) {
		routes, err := p.Routes.ListRoutes(ctx, pg)
		if err != nil {
			return false, err
		}
		endpoints := 0
		for _, r := range routes {
			endpoints += len(r.GetEndpoints())
		}
		if (i == 0) != (endpoints > 0) {
			return false, nil
		}
	}
	return true, nil
}

// withTimeout bounds ctx by d when d is positive.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
