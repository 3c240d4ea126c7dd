package harmonizer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/rep/internal/fakeexec"
)

const cellID = "cell-1"

var unavailable = models.NewError(models.ErrTypeUnavailable, "bbs down")

func lrpContainer(state executor.State) executor.Container {
	return executor.Container{
		Guid:     "ig-1",
		State:    state,
		Resource: executor.Resource{MemoryMB: 128, DiskMB: 256},
		Tags: map[string]string{
			executor.TagLifecycle:    executor.LifecycleLRP,
			executor.TagProcessGuid:  "pg-1",
			executor.TagProcessIndex: "2",
			executor.TagDomain:       "cf-apps",
			executor.TagInstanceGuid: "ig-1",
		},
		NetInfo: executor.NetInfo{ExternalIP: "10.0.0.5", InternalIP: "10.88.1.7", Ports: []executor.PortMapping{{ContainerPort: 8080, HostPort: 61001}}},
	}
}

func taskContainer(state executor.State) executor.Container {
	return executor.Container{
		Guid:  "task-1",
		State: state,
		Tags:  map[string]string{executor.TagLifecycle: executor.LifecycleTask, executor.TagDomain: "cf-tasks"},
	}
}

func desiredLRP() *modelsv1.DesiredLRP {
	return &modelsv1.DesiredLRP{
		ProcessGuid: "pg-1", Domain: "cf-apps", Rootfs: "preloaded:busybox", MemoryMb: 128,
		Env:    []*modelsv1.EnvironmentVariable{{Name: "FOO", Value: "bar"}},
		Ports:  []uint32{8080},
		Action: &modelsv1.Action{}, StartTimeout: 60, LogGuid: "log-1",
	}
}

// processorCase runs one container through ProcessContainer and checks the BBS and
// executor calls.
type processorCase struct {
	name      string
	container executor.Container
	setup     func(b *fakeBBS, e *fakeexec.Client)
	bbsCalls  []string
	execCalls []string
	check     func(t *testing.T, b *fakeBBS, e *fakeexec.Client)
}

func runProcessorCases(t *testing.T, cases []processorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBBS()
			e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
			e.Put(tc.container)
			if tc.setup != nil {
				tc.setup(b, e)
			}
			h := New(Config{CellID: cellID, Zone: "z1", PollingInterval: time.Minute}, e, b, nil, nil)
			h.ProcessContainer(context.Background(), tc.container.Guid)
			require.Equal(t, tc.bbsCalls, b.Calls(), "bbs calls")
			require.Equal(t, tc.execCalls, e.Calls(), "executor calls")
			if tc.check != nil {
				tc.check(t, b, e)
			}
		})
	}
}

func TestLRPProcessor(t *testing.T) {
	const claim = "claim pg-1/2 ig-1@cell-1"
	const remove = "remove pg-1/2 ig-1@cell-1"
	withDesired := func(b *fakeBBS, _ *fakeexec.Client) { b.desired["pg-1"] = desiredLRP() }
	runProcessorCases(t, []processorCase{
		{
			name: "reserved: claim, fetch the desired LRP, run", container: lrpContainer(executor.StateReserved), setup: withDesired,
			bbsCalls: []string{claim, "desired pg-1"}, execCalls: []string{"run ig-1"},
			check: func(t *testing.T, _ *fakeBBS, e *fakeexec.Client) {
				run := e.Runs()[0].RunInfo
				require.Equal(t, "preloaded:busybox", run.RootFS)
				require.Equal(t, 60*time.Second, run.StartTimeout)
				require.Equal(t, []uint32{8080}, run.Ports)
				require.Equal(t, 2, run.LogIndex)
				require.Equal(t, "log-1", run.LogGuid)
				require.Equal(t, []executor.EnvVar{
					{Name: "FOO", Value: "bar"},
					{Name: "INSTANCE_GUID", Value: "ig-1"}, {Name: "INSTANCE_INDEX", Value: "2"},
					{Name: "CF_INSTANCE_GUID", Value: "ig-1"}, {Name: "CF_INSTANCE_INDEX", Value: "2"},
				}, run.Env)
			},
		},
		{
			name: "reserved: refused claim deletes the container", container: lrpContainer(executor.StateReserved),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["claim"] = models.ErrInvalidStateTransition },
			bbsCalls: []string{claim}, execCalls: []string{"delete ig-1"},
		},
		{
			name: "reserved: unreachable BBS keeps the container for the next sync", container: lrpContainer(executor.StateReserved),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["claim"] = unavailable },
			bbsCalls: []string{claim}, execCalls: nil,
		},
		{
			name: "reserved: desired LRP gone removes the instance and deletes", container: lrpContainer(executor.StateReserved),
			bbsCalls: []string{claim, "desired pg-1", remove}, execCalls: []string{"delete ig-1"},
		},
		{
			name: "reserved: failed run removes the instance and deletes", container: lrpContainer(executor.StateReserved),
			setup: func(b *fakeBBS, e *fakeexec.Client) {
				withDesired(b, e)
				e.SetRunError(errors.New("boom"))
			},
			bbsCalls: []string{claim, "desired pg-1", remove}, execCalls: []string{"delete ig-1"},
		},
		{
			name: "initializing: claim again", container: lrpContainer(executor.StateInitializing),
			bbsCalls: []string{claim}, execCalls: nil,
		},
		{
			name: "created: refused claim deletes", container: lrpContainer(executor.StateCreated),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["claim"] = models.ErrRunningOnDifferentCell },
			bbsCalls: []string{claim}, execCalls: []string{"delete ig-1"},
		},
		{
			name: "running: start with net info", container: func() executor.Container {
				c := lrpContainer(executor.StateRunning)
				c.Routable = true
				return c
			}(),
			bbsCalls: []string{"start pg-1/2 ig-1"}, execCalls: nil,
			check: func(t *testing.T, b *fakeBBS, _ *fakeexec.Client) {
				req := b.starts[0]
				require.Equal(t, "cf-apps", req.GetActualLrpKey().GetDomain())
				require.Equal(t, cellID, req.GetActualLrpInstanceKey().GetCellId())
				net := req.GetActualLrpNetInfo()
				require.Equal(t, "10.0.0.5", net.GetAddress())
				require.Equal(t, "10.88.1.7", net.GetInstanceAddress())
				require.Equal(t, modelsv1.PreferredAddress_PREFERRED_ADDRESS_HOST, net.GetPreferredAddress())
				require.Len(t, net.GetPorts(), 1)
				require.Equal(t, uint32(8080), net.GetPorts()[0].GetContainerPort())
				require.Equal(t, uint32(61001), net.GetPorts()[0].GetHostPort())
				require.True(t, req.GetRoutable())
				require.Equal(t, "z1", req.GetAvailabilityZone())
			},
		},
		{
			name: "running: refused start stops the container", container: lrpContainer(executor.StateRunning),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["start"] = models.ErrInvalidStateTransition },
			bbsCalls: []string{"start pg-1/2 ig-1"}, execCalls: []string{"stop ig-1"},
		},
		{
			name: "running: another cell holds the instance, the start is unauthorised: stop", container: lrpContainer(executor.StateRunning),
			setup: func(b *fakeBBS, _ *fakeexec.Client) {
				b.errs["start"] = models.NewError(models.ErrTypeUnauthorized, `cell "cell-1" may not change actual lrp pg-1/2: it is CLAIMED on cell "cell-2"`)
			},
			bbsCalls: []string{"start pg-1/2 ig-1"}, execCalls: []string{"stop ig-1"},
		},
		{
			name: "reserved: another cell claimed the instance: delete", container: lrpContainer(executor.StateReserved),
			setup: func(b *fakeBBS, _ *fakeexec.Client) {
				b.errs["claim"] = models.NewError(models.ErrTypeUnauthorized, "held by cell-2")
			},
			bbsCalls: []string{claim}, execCalls: []string{"delete ig-1"},
		},
		{
			name: "completed after stop: remove and delete", container: func() executor.Container {
				c := lrpContainer(executor.StateCompleted)
				c.RunResult = executor.RunResult{Stopped: true}
				return c
			}(),
			bbsCalls: []string{remove}, execCalls: []string{"delete ig-1"},
		},
		{
			name: "completed by a crash: crash with the reason and delete", container: func() executor.Container {
				c := lrpContainer(executor.StateCompleted)
				c.RunResult = executor.RunResult{Failed: true, FailureReason: "APP/PROC/WEB: Exited with status 1"}
				return c
			}(),
			bbsCalls: []string{"crash pg-1/2 ig-1: APP/PROC/WEB: Exited with status 1"}, execCalls: []string{"delete ig-1"},
		},
		{
			name: "completed, BBS unreachable: keep the container", container: func() executor.Container {
				c := lrpContainer(executor.StateCompleted)
				c.RunResult = executor.RunResult{Failed: true, FailureReason: "x"}
				return c
			}(),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["crash"] = unavailable },
			bbsCalls: []string{"crash pg-1/2 ig-1: x"}, execCalls: nil,
		},
		{
			name: "completed, crash refused: delete anyway", container: func() executor.Container {
				c := lrpContainer(executor.StateCompleted)
				c.RunResult = executor.RunResult{Failed: true, FailureReason: "x"}
				return c
			}(),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["crash"] = models.ErrInvalidStateTransition },
			bbsCalls: []string{"crash pg-1/2 ig-1: x"}, execCalls: []string{"delete ig-1"},
		},
	})
}

func TestTaskProcessor(t *testing.T) {
	withTask := func(resultFile string) func(*fakeBBS, *fakeexec.Client) {
		return func(b *fakeBBS, _ *fakeexec.Client) {
			b.tasks["task-1"] = &modelsv1.Task{TaskGuid: "task-1", Domain: "cf-tasks", TaskDefinition: &modelsv1.TaskDefinition{
				Rootfs: "preloaded:busybox", Action: &modelsv1.Action{}, ResultFile: resultFile, CpuWeight: 500,
				Env: []*modelsv1.EnvironmentVariable{{Name: "A", Value: "1"}},
			}}
		}
	}
	completed := func(result executor.RunResult, resultFile string) executor.Container {
		c := taskContainer(executor.StateCompleted)
		c.RunResult = result
		if resultFile != "" {
			c.Tags[executor.TagResultFile] = resultFile
		}
		return c
	}
	big := strings.Repeat("x", MaxResultBytes+500)
	runProcessorCases(t, []processorCase{
		{
			name: "reserved: start, fetch, run with the result file tag", container: taskContainer(executor.StateReserved), setup: withTask("/tmp/result"),
			bbsCalls: []string{"start-task task-1@cell-1", "task task-1"}, execCalls: []string{"run task-1"},
			check: func(t *testing.T, _ *fakeBBS, e *fakeexec.Client) {
				run := e.Runs()[0]
				require.Equal(t, "/tmp/result", run.Tags[executor.TagResultFile])
				require.Equal(t, uint32(100), run.RunInfo.CPUWeight)
				require.Equal(t, []executor.EnvVar{{Name: "A", Value: "1"}}, run.RunInfo.Env)
			},
		},
		{
			name: "reserved: should_start false leaves it alone", container: taskContainer(executor.StateReserved),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.shouldStart = false },
			bbsCalls: []string{"start-task task-1@cell-1"}, execCalls: nil,
		},
		{
			name: "running after a restart: start again is a no-op", container: taskContainer(executor.StateRunning),
			bbsCalls: []string{"start-task task-1@cell-1"}, execCalls: nil,
		},
		{
			name: "reserved: refused start deletes", container: taskContainer(executor.StateReserved),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["start-task"] = models.ErrInvalidStateTransition },
			bbsCalls: []string{"start-task task-1@cell-1"}, execCalls: []string{"delete task-1"},
		},
		{
			name: "reserved: task gone deletes", container: taskContainer(executor.StateReserved),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["start-task"] = models.ErrResourceNotFound },
			bbsCalls: []string{"start-task task-1@cell-1"}, execCalls: []string{"delete task-1"},
		},
		{
			name: "reserved: failed run completes as failed and deletes", container: taskContainer(executor.StateReserved),
			setup: func(b *fakeBBS, e *fakeexec.Client) {
				withTask("")(b, e)
				e.SetRunError(errors.New("boom"))
			},
			bbsCalls:  []string{"start-task task-1@cell-1", "task task-1", `complete task-1@cell-1 failed=true reason="failed to run container" result=0 bytes`},
			execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: result file becomes the result", container: completed(executor.RunResult{}, "/tmp/result"),
			setup:     func(_ *fakeBBS, e *fakeexec.Client) { e.SetFile("task-1", "/tmp/result", []byte("hello")) },
			bbsCalls:  []string{`complete task-1@cell-1 failed=false reason="" result=5 bytes`},
			execCalls: []string{"delete task-1"},
			check: func(t *testing.T, b *fakeBBS, _ *fakeexec.Client) {
				require.Equal(t, "hello", b.completes[0].GetResult())
			},
		},
		{
			name: "completed: a result file over 10 KB is cut to its first 10 KB", container: completed(executor.RunResult{}, "/tmp/result"),
			setup:     func(_ *fakeBBS, e *fakeexec.Client) { e.SetFile("task-1", "/tmp/result", []byte(big)) },
			bbsCalls:  []string{`complete task-1@cell-1 failed=false reason="" result=10240 bytes`},
			execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: a result file with a NUL byte fails the task", container: completed(executor.RunResult{}, "/tmp/result"),
			setup:     func(_ *fakeBBS, e *fakeexec.Client) { e.SetFile("task-1", "/tmp/result", []byte("a\x00b")) },
			bbsCalls:  []string{`complete task-1@cell-1 failed=true reason="result file is not text: it holds a NUL byte or invalid UTF-8" result=0 bytes`},
			execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: a result file with invalid UTF-8 fails the task", container: completed(executor.RunResult{}, "/tmp/result"),
			setup:     func(_ *fakeBBS, e *fakeexec.Client) { e.SetFile("task-1", "/tmp/result", []byte("ok\xff")) },
			bbsCalls:  []string{`complete task-1@cell-1 failed=true reason="result file is not text: it holds a NUL byte or invalid UTF-8" result=0 bytes`},
			execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: a cut through a multi-byte rune at 10 KB drops the partial rune", container: completed(executor.RunResult{}, "/tmp/result"),
			setup: func(_ *fakeBBS, e *fakeexec.Client) {
				e.SetFile("task-1", "/tmp/result", []byte(strings.Repeat("x", MaxResultBytes-1)+"é"))
			},
			bbsCalls:  []string{`complete task-1@cell-1 failed=false reason="" result=10239 bytes`},
			execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: missing result file fails the task", container: completed(executor.RunResult{}, "/tmp/result"),
			bbsCalls:  []string{`complete task-1@cell-1 failed=true reason="failed to fetch result" result=0 bytes`},
			execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: failure carries the reason", container: completed(executor.RunResult{Failed: true, FailureReason: "exit status 3"}, "/tmp/result"),
			bbsCalls:  []string{`complete task-1@cell-1 failed=true reason="exit status 3" result=0 bytes`},
			execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: retryable failure rejects", container: completed(executor.RunResult{Failed: true, Retryable: true, FailureReason: "download failed"}, ""),
			bbsCalls: []string{"reject task-1: download failed"}, execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: refused completion is retried as failed", container: completed(executor.RunResult{}, ""),
			setup: func(b *fakeBBS, _ *fakeexec.Client) { b.errs["complete"] = models.ErrInvalidStateTransition },
			bbsCalls: []string{
				`complete task-1@cell-1 failed=false reason="" result=0 bytes`,
				`complete task-1@cell-1 failed=true reason="invalid state transition" result=0 bytes`,
			},
			execCalls: []string{"delete task-1"},
		},
		{
			name: "completed: BBS unreachable keeps the container", container: completed(executor.RunResult{}, ""),
			setup:    func(b *fakeBBS, _ *fakeexec.Client) { b.errs["complete"] = unavailable },
			bbsCalls: []string{`complete task-1@cell-1 failed=false reason="" result=0 bytes`}, execCalls: nil,
		},
	})
}

func TestProcessContainerIgnoresUnknownAndForeignContainers(t *testing.T) {
	b := newFakeBBS()
	e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
	e.Put(executor.Container{Guid: "other", State: executor.StateRunning, Tags: map[string]string{}})
	e.Put(executor.Container{Guid: "bad", State: executor.StateRunning, Tags: map[string]string{executor.TagLifecycle: executor.LifecycleLRP, executor.TagProcessGuid: "pg", executor.TagProcessIndex: "x"}})
	h := New(Config{CellID: cellID, PollingInterval: time.Minute}, e, b, nil, nil)
	for _, guid := range []string{"missing", "other", "bad"} {
		h.ProcessContainer(context.Background(), guid)
	}
	require.Empty(t, b.Calls())
	require.Empty(t, e.Calls())
}
