package engine_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	"drover.dev/executor/engine"
	"drover.dev/executor/sim"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

var capacity = executor.Resources{MemoryMB: 1024, DiskMB: 2048, Containers: 3}

func fastConfig() engine.Config {
	return engine.Config{
		Capacity: capacity, CellID: "cell-1", GracePeriod: 100 * time.Millisecond,
		UnhealthyInterval: 5 * time.Millisecond, HealthyInterval: 10 * time.Millisecond,
		ReservedExpiration: time.Hour, ReapInterval: time.Hour,
	}
}

func newRuntime() *sim.Runtime {
	return sim.New(sim.Config{PreloadedRootFSes: []string{"busybox"}, ExternalIP: "10.0.0.1"})
}

// start runs the executor's loop and stops it (without destroying anything) at cleanup.
func start(t *testing.T, cfg engine.Config, rt *sim.Runtime) *engine.Executor {
	t.Helper()
	e := engine.New(cfg, rt, nil, nil)
	signals := make(chan os.Signal, 1)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- e.Loop(signals, ready) }()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("executor not ready")
	}
	t.Cleanup(func() {
		signals <- syscall.SIGTERM
		<-done
	})
	return e
}

// startClean also deletes every container at cleanup.
func startClean(t *testing.T, cfg engine.Config, rt *sim.Runtime) *engine.Executor {
	e := start(t, cfg, rt)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cs, _ := e.List(ctx)
		for _, c := range cs {
			_ = e.Delete(ctx, c.Guid)
		}
	})
	return e
}

func run(path string, args ...string) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: path, Args: args}}}
}

func runInfo(action *modelsv1.Action) executor.RunInfo {
	return executor.RunInfo{
		RootFS: "preloaded:busybox", Ports: []uint32{8080}, Action: action, LogSource: "APP/PROC/WEB",
		Env: []executor.EnvVar{{Name: "CF_INSTANCE_INDEX", Value: "0"}},
	}
}

func allocate(t *testing.T, e *engine.Executor, guid string, memMB int) {
	t.Helper()
	fails := e.Allocate(context.Background(), []executor.AllocationRequest{{Guid: guid, Resource: executor.Resource{MemoryMB: memMB, DiskMB: 100}}})
	require.Empty(t, fails)
}

func startContainer(t *testing.T, e *engine.Executor, guid string, ri executor.RunInfo) {
	t.Helper()
	allocate(t, e, guid, 128)
	require.NoError(t, e.Run(context.Background(), executor.RunRequest{Guid: guid, RunInfo: ri, Tags: map[string]string{"lifecycle": "lrp"}}))
}

func waitState(t *testing.T, e *engine.Executor, guid string, state executor.State) executor.Container {
	t.Helper()
	var c executor.Container
	require.Eventually(t, func() bool {
		var err error
		c, err = e.Get(context.Background(), guid)
		return err == nil && c.State == state
	}, 10*time.Second, 2*time.Millisecond, "container %s never reached %s (last %+v)", guid, state, c)
	return c
}

func TestAllocationRules(t *testing.T) {
	e := startClean(t, fastConfig(), newRuntime())
	ctx := context.Background()
	fails := e.Allocate(ctx, []executor.AllocationRequest{
		{Guid: "a", Resource: executor.Resource{MemoryMB: 512, DiskMB: 1024}},
		{Guid: "a", Resource: executor.Resource{MemoryMB: 1}},
		{Guid: "b", Resource: executor.Resource{MemoryMB: 600}},
		{Guid: "c", Resource: executor.Resource{DiskMB: 2000}},
		{Guid: "", Resource: executor.Resource{MemoryMB: 1}},
		{Guid: "d", Resource: executor.Resource{MemoryMB: -1}},
		{Guid: "e", Resource: executor.Resource{MemoryMB: 512, DiskMB: 1024}},
	})
	want := []error{executor.ErrContainerGuidNotAvailable, executor.ErrInsufficientResources, executor.ErrInsufficientResources, executor.ErrGuidNotSpecified, executor.ErrLimitsInvalid}
	require.Len(t, fails, len(want))
	for i, f := range fails {
		assert.ErrorIs(t, f.Err, want[i], "request %d (%s)", i, f.Request.Guid)
	}
	assert.Equal(t, executor.Resources{MemoryMB: 0, DiskMB: 0, Containers: 1}, e.RemainingResources())
	assert.Equal(t, capacity, e.TotalResources())

	// No container slot left once three are held.
	require.Empty(t, e.Allocate(ctx, []executor.AllocationRequest{{Guid: "f"}}))
	fails = e.Allocate(ctx, []executor.AllocationRequest{{Guid: "g"}})
	require.Len(t, fails, 1)
	assert.ErrorIs(t, fails[0].Err, executor.ErrInsufficientResources)

	// Completed but undeleted containers still hold resources; delete gives them back.
	require.NoError(t, e.Stop(ctx, "a"))
	waitState(t, e, "a", executor.StateCompleted)
	assert.Equal(t, 0, e.RemainingResources().MemoryMB)
	require.NoError(t, e.Delete(ctx, "a"))
	assert.Equal(t, executor.Resources{MemoryMB: 512, DiskMB: 1024, Containers: 1}, e.RemainingResources())
	assert.ErrorIs(t, e.Delete(ctx, "a"), executor.ErrContainerNotFound)
	_, err := e.Get(ctx, "a")
	assert.ErrorIs(t, err, executor.ErrContainerNotFound)
}

func TestRunValidation(t *testing.T) {
	e := startClean(t, fastConfig(), newRuntime())
	ctx := context.Background()
	assert.ErrorIs(t, e.Run(ctx, executor.RunRequest{Guid: "nope", RunInfo: runInfo(run("sleep"))}), executor.ErrContainerNotFound)
	allocate(t, e, "a", 1)
	assert.ErrorIs(t, e.Run(ctx, executor.RunRequest{Guid: "a", RunInfo: runInfo(nil)}), executor.ErrStepsInvalid)
	ri := runInfo(run("sleep"))
	ri.RootFS = "preloaded:nope"
	assert.ErrorIs(t, e.Run(ctx, executor.RunRequest{Guid: "a", RunInfo: ri}), executor.ErrUnsupportedRootFS)
	require.NoError(t, e.Run(ctx, executor.RunRequest{Guid: "a", RunInfo: runInfo(run("sleep"))}))
	assert.ErrorIs(t, e.Run(ctx, executor.RunRequest{Guid: "a", RunInfo: runInfo(run("sleep"))}), executor.ErrInvalidStateTransition)
}

func TestRunWithoutMonitor(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := e.Subscribe(ctx)
	require.NoError(t, err)

	startContainer(t, e, "ok", runInfo(run("sh", "-c", "echo hello; exit 0")))
	c := waitState(t, e, "ok", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{}, c.RunResult)
	assert.Equal(t, "lrp", c.Tags["lifecycle"])
	assert.Equal(t, "10.0.0.1", c.NetInfo.ExternalIP)
	require.Len(t, c.NetInfo.Ports, 1)
	assert.Equal(t, uint32(8080), c.NetInfo.Ports[0].ContainerPort)
	assert.False(t, c.RunningAt.IsZero(), "it was running before it completed")

	var types []executor.EventType
	for len(types) < 3 {
		select {
		case ev := <-events:
			types = append(types, ev.Type)
		case <-time.After(5 * time.Second):
			t.Fatalf("events so far: %v", types)
		}
	}
	assert.Equal(t, []executor.EventType{executor.EventReserved, executor.EventRunning, executor.EventCompleted}, types)

	startContainer(t, e, "crash", runInfo(run("sh", "-c", "exit 2")))
	c = waitState(t, e, "crash", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{Failed: true, FailureReason: "APP/PROC/WEB: Exited with status 2"}, c.RunResult)

	spec, ok := rt.Spec("ok")
	require.True(t, ok)
	assert.Equal(t, []string{"CF_INSTANCE_INDEX=0"}, spec.Env)
	assert.NotEmpty(t, spec.State)
}

func TestRunningUntilStopped(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	startContainer(t, e, "g", runInfo(run("sleep")))
	c := waitState(t, e, "g", executor.StateRunning)
	assert.True(t, c.Routable)
	require.NoError(t, e.Stop(context.Background(), "g"))
	c = waitState(t, e, "g", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{Stopped: true}, c.RunResult)
	assert.Equal(t, []syscall.Signal{syscall.SIGTERM}, rt.Signals("g", "action"))

	// A stop before Run completes at once and counts as a stop.
	allocate(t, e, "r", 1)
	require.NoError(t, e.Stop(context.Background(), "r"))
	c = waitState(t, e, "r", executor.StateCompleted)
	assert.True(t, c.RunResult.Stopped)
	assert.ErrorIs(t, e.Stop(context.Background(), "nope"), executor.ErrContainerNotFound)
}

func TestSetupRunsFirstAndItsFailureCompletes(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	ri := runInfo(run("sleep"))
	ri.Setup = run("sh", "-c", "exit 0")
	startContainer(t, e, "ok", ri)
	waitState(t, e, "ok", executor.StateRunning)
	_, ok := rt.ProcessSpec("ok", "setup")
	assert.True(t, ok)

	ri.Setup = run("false")
	startContainer(t, e, "bad", ri)
	c := waitState(t, e, "bad", executor.StateCompleted)
	assert.Equal(t, "APP/PROC/WEB: Exited with status 1", c.RunResult.FailureReason)
}

func TestCreateFailureIsRetryable(t *testing.T) {
	rt := sim.New(sim.Config{PreloadedRootFSes: []string{"busybox"}, FailureRate: 1})
	e := startClean(t, fastConfig(), rt)
	startContainer(t, e, "g", runInfo(run("sleep")))
	c := waitState(t, e, "g", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{Failed: true, Retryable: true, FailureReason: "failed to create container: simulated failure"}, c.RunResult)
}

func TestMonitorPasses(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	ri := runInfo(run("sleep"))
	ri.Monitor = run("sh", "-c", "exit 0")
	ri.StartTimeout = 5 * time.Second
	startContainer(t, e, "g", ri)
	waitState(t, e, "g", executor.StateRunning)
	// Liveness keeps running the monitor with fresh process IDs.
	require.Eventually(t, func() bool { _, ok := rt.ProcessSpec("g", "monitor-3"); return ok }, 5*time.Second, 2*time.Millisecond)
	c, err := e.Get(context.Background(), "g")
	require.NoError(t, err)
	assert.Equal(t, executor.StateRunning, c.State)
	assertLogContains(t, e, "g", "Container became healthy")
}

func TestMonitorNeverPasses(t *testing.T) {
	e := startClean(t, fastConfig(), newRuntime())
	ri := runInfo(run("sleep"))
	ri.Monitor = run("sh", "-c", "exit 1")
	ri.StartTimeout = 100 * time.Millisecond
	startContainer(t, e, "g", ri)
	c := waitState(t, e, "g", executor.StateCompleted)
	assert.True(t, c.RunResult.Failed)
	assert.Equal(t, "Instance never healthy after 100ms: APP/PROC/WEB: Exited with status 1", c.RunResult.FailureReason)
	assert.True(t, c.RunningAt.IsZero())
}

func TestCheckDefinitionNeverPassesNamesTheCheck(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	ri := runInfo(run("sleep"))
	ri.CheckDefinition = &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: 8080}}}}
	ri.StartTimeout = 100 * time.Millisecond
	allocate(t, e, "g", 1)
	rt.FailChecks("g", true)
	require.NoError(t, e.Run(context.Background(), executor.RunRequest{Guid: "g", RunInfo: ri}))
	c := waitState(t, e, "g", executor.StateCompleted)
	assert.Equal(t, "Instance never healthy after 100ms: health check never passed: tcp check on port 8080 failed: connection refused (simulated)", c.RunResult.FailureReason)
}

func TestHealthyThenUnhealthy(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	ri := runInfo(run("sleep"))
	ri.CheckDefinition = &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{HttpCheck: &modelsv1.HTTPCheck{Port: 8080}}}}
	startContainer(t, e, "g", ri)
	waitState(t, e, "g", executor.StateRunning)
	rt.FailChecks("g", true)
	c := waitState(t, e, "g", executor.StateCompleted)
	assert.Equal(t, "Instance became unhealthy: health check failed: http check on port 8080 path / failed: connection refused (simulated)", c.RunResult.FailureReason)
	assert.True(t, c.RunResult.Failed)
	assert.Contains(t, rt.Signals("g", "action"), syscall.SIGTERM, "the action is stopped")
}

func TestActionExitWithMonitorKeepsRunning(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	ri := runInfo(run("sh", "-c", "exit 0"))
	ri.Monitor = run("true")
	startContainer(t, e, "g", ri)
	waitState(t, e, "g", executor.StateRunning)
	// The daemonised instance stays running while the monitor keeps passing.
	require.Eventually(t, func() bool { _, ok := rt.ProcessSpec("g", "monitor-5"); return ok }, 5*time.Second, 2*time.Millisecond)
	c, err := e.Get(context.Background(), "g")
	require.NoError(t, err)
	assert.Equal(t, executor.StateRunning, c.State)
}

func TestExpiredReservation(t *testing.T) {
	cfg := fastConfig()
	cfg.ReservedExpiration = 40 * time.Millisecond
	e := startClean(t, cfg, newRuntime())
	allocate(t, e, "g", 1)
	c := waitState(t, e, "g", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{Failed: true, FailureReason: "expired container"}, c.RunResult)
}

func TestVanishedAndUnknownContainersAreReaped(t *testing.T) {
	rt := newRuntime()
	cfg := fastConfig()
	cfg.ReapInterval = 20 * time.Millisecond
	e := startClean(t, cfg, rt)
	startContainer(t, e, "g", runInfo(run("sleep")))
	waitState(t, e, "g", executor.StateRunning)
	rt.Kill("g")
	c := waitState(t, e, "g", executor.StateCompleted)
	assert.True(t, c.RunResult.Failed)
	assert.Contains(t, []string{"missing container", "APP/PROC/WEB: Exited with status 137"}, c.RunResult.FailureReason)

	_, err := rt.Create(context.Background(), executor.ContainerSpec{Guid: "stray"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok := rt.Spec("stray"); return !ok }, 5*time.Second, 5*time.Millisecond)
}

func TestRuntimeEvents(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	startContainer(t, e, "oom", runInfo(run("sleep")))
	startContainer(t, e, "disk", runInfo(run("sleep")))
	waitState(t, e, "oom", executor.StateRunning)
	waitState(t, e, "disk", executor.StateRunning)

	rt.Emit(executor.RuntimeEvent{Guid: "oom", Kind: executor.RuntimeOOM})
	rt.Emit(executor.RuntimeEvent{Guid: "disk", Kind: executor.RuntimeDiskExceeded, Reason: "disk quota of 100 MB exceeded"})
	c := waitState(t, e, "disk", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{Failed: true, FailureReason: "disk quota of 100 MB exceeded"}, c.RunResult)

	// An OOM kill of any process (the main one still runs) crashes the container.
	c = waitState(t, e, "oom", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{Failed: true,
		FailureReason: "out of memory: a process in the container was killed at the 128 MB memory limit"}, c.RunResult)
	assert.Equal(t, engine.OOMReason(128), c.RunResult.FailureReason)
	assertLogContains(t, e, "oom", "Cell cell-1 crashing instance oom: "+engine.OOMReason(128))

	// When the memory limit takes the whole container (its init too), the vanished
	// container is reported as out of memory as well, whichever notice comes first.
	for _, guid := range []string{"oom", "disk"} {
		require.NoError(t, e.Delete(context.Background(), guid))
	}
	startContainer(t, e, "oom-init", runInfo(run("sleep")))
	waitState(t, e, "oom-init", executor.StateRunning)
	rt.Kill("oom-init")
	rt.Emit(executor.RuntimeEvent{Guid: "oom-init", Kind: executor.RuntimeOOM})
	c = waitState(t, e, "oom-init", executor.StateCompleted)
	assert.True(t, c.RunResult.Failed)
}

func TestOOMReason(t *testing.T) {
	assert.Equal(t, "out of memory: a process in the container was killed at the 256 MB memory limit", engine.OOMReason(256))
	assert.Equal(t, "out of memory: a process in the container was killed by the memory limit", engine.OOMReason(0))
}

func TestOOMKillMissedByEventsCrashesAtReap(t *testing.T) {
	rt := newRuntime()
	cfg := fastConfig()
	cfg.ReapInterval = 20 * time.Millisecond
	e := startClean(t, cfg, rt)
	startContainer(t, e, "kept", runInfo(run("sleep")))
	startContainer(t, e, "killed", runInfo(run("sleep")))
	waitState(t, e, "kept", executor.StateRunning)
	waitState(t, e, "killed", executor.StateRunning)

	// No event: the next reap reads the count the runtime lists.
	rt.SetOOMKills("killed", 1)
	c := waitState(t, e, "killed", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{Failed: true, FailureReason: engine.OOMReason(128)}, c.RunResult)
	c, err := e.Get(context.Background(), "kept")
	require.NoError(t, err)
	assert.Equal(t, executor.StateRunning, c.State, "no OOM kill, no crash")
}

func TestOOMKillWhileExecutorDownCrashesAdoptedContainer(t *testing.T) {
	rt := newRuntime()
	cfg := fastConfig()
	first := engine.New(cfg, rt, nil, nil)
	signals := make(chan os.Signal, 1)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- first.Loop(signals, ready) }()
	<-ready
	startContainer(t, first, "killed", runInfo(run("sleep")))
	startContainer(t, first, "kept", runInfo(run("sleep")))
	waitState(t, first, "killed", executor.StateRunning)
	waitState(t, first, "kept", executor.StateRunning)
	signals <- syscall.SIGTERM
	require.NoError(t, <-done)

	rt.SetOOMKills("killed", 2)
	second := startClean(t, cfg, rt)
	c := waitState(t, second, "killed", executor.StateCompleted)
	assert.Equal(t, executor.RunResult{Failed: true, FailureReason: engine.OOMReason(128)}, c.RunResult)
	c, err := second.Get(context.Background(), "kept")
	require.NoError(t, err)
	assert.Equal(t, executor.StateRunning, c.State)
}

func TestAdoptionAfterRestart(t *testing.T) {
	rt := newRuntime()
	cfg := fastConfig()
	first := engine.New(cfg, rt, nil, nil)
	signals := make(chan os.Signal, 1)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- first.Loop(signals, ready) }()
	<-ready
	ri := runInfo(run("sleep"))
	ri.CheckDefinition = &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: 8080}}}}
	startContainer(t, first, "g", ri)
	before := waitState(t, first, "g", executor.StateRunning)
	signals <- syscall.SIGTERM
	require.NoError(t, <-done)
	// A container without adoption state cannot be adopted and is destroyed.
	_, err := rt.Create(context.Background(), executor.ContainerSpec{Guid: "junk"})
	require.NoError(t, err)

	second := startClean(t, cfg, rt)
	c, err := second.Get(context.Background(), "g")
	require.NoError(t, err)
	assert.Equal(t, executor.StateRunning, c.State)
	assert.Equal(t, before.NetInfo, c.NetInfo)
	assert.Equal(t, "lrp", c.Tags["lifecycle"])
	require.NotNil(t, c.RunInfo)
	assert.Equal(t, "APP/PROC/WEB", c.RunInfo.LogSource)
	assert.Equal(t, uint32(8080), c.RunInfo.CheckDefinition.GetChecks()[0].GetTcpCheck().GetPort())
	assert.Equal(t, executor.Resources{MemoryMB: 1024 - 128, DiskMB: 2048 - 100, Containers: 2}, second.RemainingResources())
	assert.Equal(t, []string{"action"}, rt.Processes("g"), "the process keeps running")
	_, ok := rt.Spec("junk")
	assert.False(t, ok)

	// Liveness resumed: a failing check crashes the adopted container.
	rt.FailChecks("g", true)
	c = waitState(t, second, "g", executor.StateCompleted)
	assert.Contains(t, c.RunResult.FailureReason, "Instance became unhealthy")
}

func TestAdoptedContainerIsStoppable(t *testing.T) {
	rt := newRuntime()
	cfg := fastConfig()
	first := engine.New(cfg, rt, nil, nil)
	signals := make(chan os.Signal, 1)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- first.Loop(signals, ready) }()
	<-ready
	startContainer(t, first, "g", runInfo(run("sleep")))
	waitState(t, first, "g", executor.StateRunning)
	signals <- syscall.SIGTERM
	<-done

	second := startClean(t, cfg, rt)
	waitState(t, second, "g", executor.StateRunning)
	require.NoError(t, second.Delete(context.Background(), "g"))
	assert.Equal(t, capacity, second.RemainingResources())
	_, ok := rt.Spec("g")
	assert.False(t, ok)
}

func assertLogContains(t *testing.T, e *engine.Executor, guid, text string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ch, err := e.Logs(context.Background(), guid, executor.LogOptions{})
		if err != nil {
			return false
		}
		for l := range ch {
			if l.Text == text {
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "log line %q", text)
}

func TestLogs(t *testing.T) {
	e := startClean(t, fastConfig(), newRuntime())
	startContainer(t, e, "g", runInfo(run("sh", "-c", "echo hello; trap-term")))
	waitState(t, e, "g", executor.StateRunning)
	assertLogContains(t, e, "g", "Cell cell-1 creating container for instance g")
	assertLogContains(t, e, "g", "hello")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := e.Logs(ctx, "g", executor.LogOptions{Follow: true, Tail: 1})
	require.NoError(t, err)
	first := <-ch
	assert.Equal(t, "hello", first.Text)
	assert.Equal(t, "APP/PROC/WEB", first.Source)
	require.NoError(t, e.Delete(context.Background(), "g"))
	var texts []string
	for l := range ch {
		texts = append(texts, l.Text)
	}
	assert.True(t, slices.Contains(texts, "Cell cell-1 stopping instance g"), "%v", texts)
	assert.Contains(t, texts, "Cell cell-1 successfully destroyed container for instance g")
	_, err = e.Logs(context.Background(), "g", executor.LogOptions{})
	assert.ErrorIs(t, err, executor.ErrContainerNotFound)
}

func TestReadFileAndMetrics(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	ctx := context.Background()
	startContainer(t, e, "g", runInfo(run("sleep")))
	waitState(t, e, "g", executor.StateRunning)
	require.NoError(t, rt.WriteFile("g", "/tmp/result", []byte("42")))
	data, err := e.ReadFile(ctx, "g", "/tmp/result", 10)
	require.NoError(t, err)
	assert.Equal(t, "42", string(data))
	_, err = e.ReadFile(ctx, "g", "/tmp/result", 1)
	assert.ErrorIs(t, err, executor.ErrFileTooLarge)
	_, err = e.ReadFile(ctx, "g", "/tmp/missing", 10)
	assert.Error(t, err)

	allocate(t, e, "reserved", 1)
	ms, err := e.Metrics(ctx)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, executor.Metrics{Guid: "g", CPUTimeNs: sim.UsageCPUTimeNs, MemoryBytes: sim.UsageMemoryBytes,
		DiskBytes: sim.UsageDiskBytes, Pids: sim.UsagePids, MemoryQuotaBytes: 128 << 20, DiskQuotaBytes: 100 << 20}, ms[0])
	assert.True(t, e.Healthy(ctx))
	assert.Equal(t, "preloaded", e.RootFSProviders()[0].GetName())
}

func TestAppendCellLog(t *testing.T) {
	e := startClean(t, fastConfig(), newRuntime())
	startContainer(t, e, "g", runInfo(run("sleep")))
	waitState(t, e, "g", executor.StateRunning)
	require.NoError(t, e.AppendCellLog(context.Background(), "g", "Cell cell-1 requesting replacement for instance g"))
	assertLogContains(t, e, "g", "Cell cell-1 requesting replacement for instance g")
	assert.ErrorIs(t, e.AppendCellLog(context.Background(), "nope", "x"), executor.ErrContainerNotFound)
}

// TestAContainerCreatedDuringTheReapersListIsNotMissing: a container whose creation ends
// while the reaper's (slow) list is in flight is absent from that list; the reaper must
// not take it for a vanished container and crash it "missing container".
func TestAContainerCreatedDuringTheReapersListIsNotMissing(t *testing.T) {
	rt := sim.New(sim.Config{PreloadedRootFSes: []string{"busybox"}, ExternalIP: "10.0.0.1", ListLatency: 300 * time.Millisecond})
	cfg := fastConfig()
	cfg.ReapInterval = 10 * time.Millisecond
	e := startClean(t, cfg, rt)
	for i := range capacity.Containers {
		guid := fmt.Sprintf("g%d", i)
		// Create it while a list is in flight: right after the next one has read.
		n := rt.Lists()
		require.Eventually(t, func() bool { return rt.Lists() > n }, 5*time.Second, time.Millisecond)
		startContainer(t, e, guid, runInfo(run("sleep")))
		waitState(t, e, guid, executor.StateRunning)
	}
	// Several reap passes, each listing for 300 ms, have seen every container by now.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		cs, err := e.List(context.Background())
		require.NoError(t, err)
		for _, c := range cs {
			require.NotEqual(t, executor.StateCompleted, c.State, "%s completed: %s", c.Guid, c.RunResult.FailureReason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
