package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"drover.dev/executor"
	"drover.dev/executor/logbuf"
	"drover.dev/executor/steps"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// completeLocked moves a container to completed once. e.mu must be held.
func (e *Executor) completeLocked(n *node, result executor.RunResult) {
	if n.c.State == executor.StateCompleted {
		return
	}
	if len(result.FailureReason) > MaxFailureReasonBytes {
		result.FailureReason = result.FailureReason[:MaxFailureReasonBytes]
	}
	n.c.State = executor.StateCompleted
	n.c.RunResult = result
	n.c.Routable = false
	e.logger.Info("container-completed", "guid", n.c.Guid, "failed", result.Failed, "reason", result.FailureReason, "stopped", result.Stopped)
	e.emitLocked(executor.EventCompleted, n)
}

// finish completes a container with how its run ended (a recorded stop wins).
// After the executor detached, containers are left as they are for a later executor.
func (e *Executor) finish(n *node, result executor.RunResult) {
	select {
	case <-e.detached:
		return
	default:
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if n.stopResult != nil {
		result = *n.stopResult
	}
	e.completeLocked(n, result)
}

// transition moves a container from one state to the next; false when it moved on
// (e.g. completed by a stop).
func (e *Executor) transition(n *node, from, to executor.State, update func(*executor.Container)) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n.c.State != from || n.stopResult != nil {
		return false
	}
	n.c.State = to
	if update != nil {
		update(&n.c)
	}
	if to == executor.StateRunning {
		e.emitLocked(executor.EventRunning, n)
	}
	return true
}

// envStrings turns env vars into NAME=value.
func envStrings(env []executor.EnvVar) []string {
	out := make([]string, 0, len(env))
	for _, v := range env {
		out = append(out, v.Name+"="+v.Value)
	}
	return out
}

// create makes the runtime container, fetches cached dependencies and runs the steps.
func (e *Executor) create(ctx context.Context, n *node) {
	defer close(n.done)
	e.mu.Lock()
	c := n.snapshot()
	e.mu.Unlock()
	ri := *c.RunInfo
	guid := c.Guid
	n.cellLog("Cell %s creating container for instance %s", e.cfg.CellID, guid)

	state, err := encodeState(c)
	if err != nil {
		e.finish(n, executor.RunResult{Failed: true, FailureReason: "failed to encode container state: " + err.Error()})
		return
	}
	started := time.Now()
	net, err := e.rt.Create(ctx, executor.ContainerSpec{
		Guid: guid, RootFS: ri.RootFS, Resource: c.Resource, CPUWeight: ri.CPUWeight, Privileged: ri.Privileged,
		Ports: ri.Ports, Env: envStrings(ri.Env), Tags: c.Tags, State: state,
		ImageUsername: ri.ImageUsername, ImagePassword: ri.ImagePassword,
		EgressRules: ri.EgressRules,
	})
	if err != nil {
		n.cellLog("Cell %s failed to create container for instance %s: %s", e.cfg.CellID, guid, err)
		e.logger.Error("create-failed", "guid", guid, "error", err)
		e.finish(n, executor.RunResult{Failed: true, Retryable: true, FailureReason: "failed to create container: " + err.Error()})
		return
	}
	e.mu.Lock()
	n.created, n.createdAt = true, time.Now()
	e.mu.Unlock()
	e.logger.Info("container-created", "guid", guid, "duration", time.Since(started))
	n.cellLog("Cell %s successfully created container for instance %s", e.cfg.CellID, guid)

	if err := e.fetchImageLayers(ctx, guid, ri); err != nil {
		e.logger.Error("image-layers-failed", "guid", guid, "error", err)
		n.cellLog("Cell %s failed to download image layers for instance %s: %s", e.cfg.CellID, guid, err)
		e.finish(n, executor.RunResult{Failed: true, Retryable: true, FailureReason: "failed to download image layers: " + err.Error()})
		return
	}
	if err := e.fetchDependencies(ctx, guid, ri); err != nil {
		e.logger.Error("cached-dependencies-failed", "guid", guid, "error", err)
		e.finish(n, executor.RunResult{Failed: true, Retryable: true, FailureReason: "failed to download cached artifacts"})
		return
	}
	if !e.transition(n, executor.StateInitializing, executor.StateCreated, func(c *executor.Container) { c.NetInfo = net }) {
		e.finish(n, executor.RunResult{})
		return
	}
	e.finish(n, e.runSteps(ctx, n, net, ri, false))
}

// fetchImageLayers extracts each image layer into the container, in order, before
// anything else runs: shared layers go through the download cache (keyed by their
// digest), exclusive ones are downloaded for this container only.
func (e *Executor) fetchImageLayers(ctx context.Context, guid string, ri executor.RunInfo) error {
	for _, l := range ri.ImageLayers {
		if e.dl == nil {
			return fmt.Errorf("no downloader configured for image layer %s", l.GetName())
		}
		req := steps.DownloadRequest{URL: l.GetUrl(), ChecksumAlgorithm: l.GetDigestAlgorithm(), ChecksumValue: l.GetDigestValue()}
		if l.GetLayerType() == modelsv1.ImageLayer_LAYER_TYPE_SHARED && l.GetDigestValue() != "" {
			req.CacheKey = "image-layer-" + strings.ToLower(l.GetDigestAlgorithm()) + "-" + strings.ToLower(l.GetDigestValue())
		}
		rc, err := e.dl.Fetch(ctx, req)
		if err != nil {
			return fmt.Errorf("image layer %q: %w", l.GetName(), err)
		}
		err = e.rt.StreamIn(ctx, guid, l.GetDestinationPath(), "", rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("image layer %q into %s: %w", l.GetName(), l.GetDestinationPath(), err)
		}
	}
	return nil
}

// fetchDependencies streams each cached dependency into the container.
func (e *Executor) fetchDependencies(ctx context.Context, guid string, ri executor.RunInfo) error {
	for _, d := range ri.CachedDependencies {
		if e.dl == nil {
			return fmt.Errorf("no downloader configured for %s", d.GetFrom())
		}
		rc, err := e.dl.Fetch(ctx, steps.DownloadRequest{URL: d.GetFrom(), CacheKey: d.GetCacheKey(),
			ChecksumAlgorithm: d.GetChecksumAlgorithm(), ChecksumValue: d.GetChecksumValue()})
		if err != nil {
			return fmt.Errorf("fetching %s: %w", d.GetFrom(), err)
		}
		err = e.rt.StreamIn(ctx, guid, d.GetTo(), "", rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("streaming %s into %s: %w", d.GetFrom(), d.GetTo(), err)
		}
	}
	return nil
}

// deps is what the steps of a container run against.
func (e *Executor) deps(n *node, net executor.NetInfo, ri executor.RunInfo, reattach bool) *steps.Deps {
	return &steps.Deps{
		Runtime: e.rt, Guid: n.c.Guid, NetInfo: net,
		Logs:       logbuf.Sink{Buffer: n.logs, Guid: n.c.Guid},
		Downloader: e.dl, GracePeriod: e.cfg.GracePeriod, OOMKilled: n.oom.Load,
		DefaultSource: ri.LogSource, Reattach: reattach,
		DownloadSlots: e.downloadSlots, UploadSlots: e.uploadSlots, Detached: e.detached,
	}
}

// health builds the health runner of a container, nil without monitor or checks.
func (e *Executor) health(n *node, deps *steps.Deps, ri executor.RunInfo, adopted bool) (*steps.Health, error) {
	h := &steps.Health{
		Schedule:    steps.Schedule{StartTimeout: ri.StartTimeout, UnhealthyInterval: e.cfg.UnhealthyInterval, HealthyInterval: e.cfg.HealthyInterval},
		SkipStartup: adopted,
	}
	switch {
	case len(ri.CheckDefinition.GetChecks()) > 0:
		startup, probes, err := steps.CheckDefinitionHealth(e.rt, n.c.Guid, ri.CheckDefinition)
		if err != nil {
			return nil, err
		}
		h.Startup, h.Liveness = startup, probes
	case ri.Monitor != nil:
		prefix := "monitor"
		if adopted {
			prefix += "-r" + strconv.FormatInt(e.started.Unix(), 36)
		}
		checker, err := steps.MonitorChecker(ri.Monitor, *deps, prefix)
		if err != nil {
			return nil, err
		}
		h.Startup, h.Liveness = checker, []steps.Probe{{Checker: checker}}
	default:
		return nil, nil
	}
	return h, nil
}

// setRunning moves a created container to running.
func (e *Executor) setRunning(n *node) {
	e.transition(n, executor.StateCreated, executor.StateRunning, func(c *executor.Container) {
		c.RunningAt = time.Now()
		c.Routable = true
	})
}

// result turns the error of a step tree into a RunResult.
func result(err error) executor.RunResult {
	if err == nil {
		return executor.RunResult{}
	}
	return executor.RunResult{Failed: true, FailureReason: err.Error()}
}

// runSteps runs setup (unless adopted), then the action beside the health checks.
func (e *Executor) runSteps(ctx context.Context, n *node, net executor.NetInfo, ri executor.RunInfo, adopted bool) executor.RunResult {
	deps := e.deps(n, net, ri, adopted)
	if ri.Setup != nil && !adopted {
		setup, err := steps.Build(ri.Setup, deps, "setup")
		if err != nil {
			return result(err)
		}
		if err := setup.Run(ctx, nil); err != nil {
			return result(err)
		}
	}
	action, err := steps.Build(ri.Action, deps, "action")
	if err != nil {
		return result(err)
	}
	health, err := e.health(n, deps, ri, adopted)
	if err != nil {
		return result(err)
	}
	if health == nil {
		return result(action.Run(ctx, func() { e.setRunning(n) }))
	}
	if !adopted {
		n.cellLog("Starting health monitoring of container")
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	// Health checks end when the executor detaches; the action is left running.
	healthCtx, cancelHealth := context.WithCancel(inner)
	defer cancelHealth()
	go func() {
		select {
		case <-e.detached:
			cancelHealth()
		case <-healthCtx.Done():
		}
	}()
	actionErr, healthErr := make(chan error, 1), make(chan error, 1)
	go func() { actionErr <- action.Run(inner, nil) }()
	go func() {
		healthErr <- health.Run(healthCtx, func() {
			n.cellLog("Container became healthy")
			e.setRunning(n)
		})
	}()
	select {
	case err := <-actionErr:
		if err == nil && ctx.Err() == nil {
			// The action daemonised; the health checks decide from now on.
			return e.healthResult(n, <-healthErr)
		}
		cancel()
		<-healthErr
		return result(err)
	case err := <-healthErr:
		if errors.Is(err, steps.ErrCancelled) && ctx.Err() == nil {
			// Detached: leave the action running for the next executor.
			return result(<-actionErr)
		}
		cancel()
		<-actionErr
		return e.healthResult(n, err)
	}
}

// healthResult logs a health failure and turns it into a RunResult.
func (e *Executor) healthResult(n *node, err error) executor.RunResult {
	if msg, ok := steps.EmittableMessage(err); ok && !errors.Is(err, steps.ErrCancelled) {
		n.logs.Append(executor.LogLine{ContainerGuid: n.c.Guid, Source: "HEALTH", Stream: logbuf.Stderr, Text: msg, Time: time.Now()})
	}
	return result(err)
}
