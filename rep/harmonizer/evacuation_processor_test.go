package harmonizer

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"

	"drover.dev/bbs/models"
	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/rep/evacuation"
	"drover.dev/rep/internal/fakeexec"
)

const replacementLine = "Cell cell-1 requesting replacement for instance ig-1"

// evacuatingHarmonizer is a harmonizer whose cell already evacuates.
func evacuatingHarmonizer(e executor.Client, b *fakeBBS) *Harmonizer {
	state := evacuation.NewState(nil)
	state.Start()
	return New(Config{CellID: cellID, Zone: "z1", PollingInterval: time.Hour, Evacuation: state}, e, b, nil, nil)
}

func completed(stopped bool, reason string) executor.Container {
	c := lrpContainer(executor.StateCompleted)
	c.RunResult = executor.RunResult{Stopped: stopped, Failed: !stopped, FailureReason: reason}
	return c
}

func TestEvacuationProcessor(t *testing.T) {
	const (
		claimed = "evacuate-claimed pg-1/2 ig-1@cell-1"
		running = "evacuate-running pg-1/2 ig-1@cell-1"
		stopped = "evacuate-stopped pg-1/2 ig-1@cell-1"
		crashed = "evacuate-crashed pg-1/2 ig-1@cell-1: exit status 2"
		deleted = "delete ig-1"
	)
	fail := func(name string, err error) func(*fakeBBS) { return func(b *fakeBBS) { b.errs[name] = err } }
	keep := func(name string) func(*fakeBBS) { return func(b *fakeBBS) { b.SetKeep(name, true) } }
	tests := []struct {
		name      string
		container executor.Container
		setup     func(*fakeBBS)
		bbsCalls  []string
		execCalls []string
		appLog    []string
	}{
		{name: "reserved: handed back and deleted", container: lrpContainer(executor.StateReserved), bbsCalls: []string{claimed}, execCalls: []string{deleted}},
		{name: "initializing: handed back and deleted", container: lrpContainer(executor.StateInitializing), bbsCalls: []string{claimed}, execCalls: []string{deleted}},
		{name: "created: handed back and deleted", container: lrpContainer(executor.StateCreated), bbsCalls: []string{claimed}, execCalls: []string{deleted}},
		{name: "created: unreachable BBS keeps it for the next poll", container: lrpContainer(executor.StateCreated), setup: fail("evacuate-claimed", unavailable), bbsCalls: []string{claimed}},
		{name: "created: refused hand-back still deletes", container: lrpContainer(executor.StateCreated), setup: fail("evacuate-claimed", models.ErrInvalidStateTransition), bbsCalls: []string{claimed}, execCalls: []string{deleted}},
		{name: "running: keep leaves it running", container: lrpContainer(executor.StateRunning), setup: keep("evacuate-running"), bbsCalls: []string{running}, appLog: []string{replacementLine}},
		{name: "running: released is deleted", container: lrpContainer(executor.StateRunning), bbsCalls: []string{running}, execCalls: []string{deleted}, appLog: []string{replacementLine}},
		{name: "running: unreachable BBS means keep", container: lrpContainer(executor.StateRunning), setup: fail("evacuate-running", unavailable), bbsCalls: []string{running}, appLog: []string{replacementLine}},
		{name: "running: any BBS error means keep", container: lrpContainer(executor.StateRunning), setup: fail("evacuate-running", models.ErrResourceNotFound), bbsCalls: []string{running}, appLog: []string{replacementLine}},
		{name: "completed, stopped: reported stopped and deleted", container: completed(true, ""), bbsCalls: []string{stopped}, execCalls: []string{deleted}},
		{name: "completed, crashed: reported crashed with the reason and deleted", container: completed(false, "exit status 2"), bbsCalls: []string{crashed}, execCalls: []string{deleted}},
		{name: "completed: unreachable BBS keeps it for the next poll", container: completed(false, "exit status 2"), setup: fail("evacuate-crashed", unavailable), bbsCalls: []string{crashed}},
		{name: "completed: refused report still deletes", container: completed(true, ""), setup: fail("evacuate-stopped", models.ErrResourceNotFound), bbsCalls: []string{stopped}, execCalls: []string{deleted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newFakeBBS()
			e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
			e.Put(tt.container)
			if tt.setup != nil {
				tt.setup(b)
			}
			evacuatingHarmonizer(e, b).ProcessContainer(context.Background(), tt.container.Guid)
			require.Equal(t, tt.bbsCalls, b.Calls(), "bbs calls")
			require.Equal(t, tt.execCalls, e.Calls(), "executor calls")
			require.Equal(t, tt.appLog, e.LogTexts(tt.container.Guid), "app log")
		})
	}
}

func TestEvacuationProcessorSendsTheNetInfo(t *testing.T) {
	b := newFakeBBS()
	e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
	c := lrpContainer(executor.StateRunning)
	c.Routable = true
	e.Put(c)
	b.SetKeep("evacuate-running", true)
	evacuatingHarmonizer(e, b).ProcessContainer(context.Background(), c.Guid)
	require.Len(t, b.evacuateRunning, 1)
	req := b.evacuateRunning[0]
	require.Equal(t, "10.0.0.5", req.GetActualLrpNetInfo().GetAddress())
	require.Equal(t, "10.88.1.7", req.GetActualLrpNetInfo().GetInstanceAddress())
	require.Len(t, req.GetActualLrpNetInfo().GetPorts(), 1)
	require.Equal(t, uint32(61001), req.GetActualLrpNetInfo().GetPorts()[0].GetHostPort())
	require.True(t, req.GetRoutable())
	require.Equal(t, "z1", req.GetAvailabilityZone())
	require.Equal(t, "cf-apps", req.GetActualLrpKey().GetDomain())
}

func TestEvacuationKeepsThenReleasesARunningInstance(t *testing.T) {
	b := newFakeBBS()
	e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
	e.Put(lrpContainer(executor.StateRunning))
	h := evacuatingHarmonizer(e, b)

	b.SetKeep("evacuate-running", true)
	h.ProcessContainer(context.Background(), "ig-1")
	h.ProcessContainer(context.Background(), "ig-1")
	require.Empty(t, e.Calls(), "kept while the replacement is not running")

	b.SetKeep("evacuate-running", false)
	h.ProcessContainer(context.Background(), "ig-1")
	require.Equal(t, []string{"delete ig-1"}, e.Calls())
	require.Len(t, b.Calls(), 3)
	require.Equal(t, []string{replacementLine}, e.LogTexts("ig-1"), "the replacement is announced once")
}

func TestEvacuationWithoutCellLogsSkipsTheAppLine(t *testing.T) {
	b := newFakeBBS()
	e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
	e.Put(lrpContainer(executor.StateRunning))
	// The embedding hides AppendCellLog: an executor that cannot take the rep's lines.
	plain := struct{ executor.Client }{e}
	evacuatingHarmonizer(plain, b).ProcessContainer(context.Background(), "ig-1")
	require.Equal(t, []string{"evacuate-running pg-1/2 ig-1@cell-1"}, b.Calls())
	require.Empty(t, e.LogTexts("ig-1"))
}

func TestEvacuationLeavesTasksToTheTaskProcessor(t *testing.T) {
	b := newFakeBBS()
	e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
	e.Put(taskContainer(executor.StateRunning))
	evacuatingHarmonizer(e, b).ProcessContainer(context.Background(), "task-1")
	require.Equal(t, []string{"start-task task-1@cell-1"}, b.Calls())
	require.Empty(t, e.Calls(), "a running task keeps running")
}

func TestRetireLeftover(t *testing.T) {
	t.Run("instance at the timeout: reported stopped, logged, deleted", func(t *testing.T) {
		b := newFakeBBS()
		e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
		c := lrpContainer(executor.StateRunning)
		e.Put(c)
		evacuatingHarmonizer(e, b).RetireLeftover(context.Background(), c, true)
		require.Equal(t, []string{"evacuate-stopped pg-1/2 ig-1@cell-1"}, b.Calls())
		require.Equal(t, []string{"delete ig-1"}, e.Calls())
		require.Equal(t, []string{"Cell cell-1 reached evacuation timeout for instance ig-1"}, e.LogTexts("ig-1"))
	})
	t.Run("unreachable BBS still deletes", func(t *testing.T) {
		b := newFakeBBS()
		b.errs["evacuate-stopped"] = unavailable
		e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
		c := lrpContainer(executor.StateRunning)
		e.Put(c)
		evacuatingHarmonizer(e, b).RetireLeftover(context.Background(), c, false)
		require.Equal(t, []string{"delete ig-1"}, e.Calls())
		require.Empty(t, e.LogTexts("ig-1"))
	})
	t.Run("task: deleted only", func(t *testing.T) {
		b := newFakeBBS()
		e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
		c := taskContainer(executor.StateRunning)
		e.Put(c)
		evacuatingHarmonizer(e, b).RetireLeftover(context.Background(), c, true)
		require.Empty(t, b.Calls())
		require.Equal(t, []string{"delete task-1"}, e.Calls())
	})
}

func TestResidualEvacuatingRecordIsRemoved(t *testing.T) {
	h, b, e := newHarmonizer(t)
	lrp := &modelsv1.ActualLRP{ProcessGuid: "pg", Index: 1, Domain: "d", InstanceGuid: "ig", Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING}
	h.processResidualEvacuatingLRP(context.Background(), lrp)
	require.Equal(t, []string{"remove-evacuating pg/1 ig@cell-1"}, b.Calls())

	e.Put(lrpContainer(executor.StateRunning))
	h.processResidualEvacuatingLRP(context.Background(), &modelsv1.ActualLRP{ProcessGuid: "pg-1", Index: 2, InstanceGuid: "ig-1"})
	require.Len(t, b.Calls(), 1, "a record whose container exists is kept")
}

func TestRunSwitchesToTheEvacuationPollingInterval(t *testing.T) {
	b := newFakeBBS()
	e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
	e.Put(lrpContainer(executor.StateRunning))
	state := evacuation.NewState(nil)
	h := New(Config{CellID: cellID, Zone: "z1", PollingInterval: time.Hour, EvacuationPollingInterval: 20 * time.Millisecond, Evacuation: state}, e, b, nil, nil)
	process := ifrit.Invoke(h)
	t.Cleanup(func() {
		process.Signal(syscall.SIGTERM)
		<-process.Wait()
	})
	require.Eventually(t, func() bool { return contains(b.Calls(), "start pg-1/2 ig-1") }, 5*time.Second, 5*time.Millisecond)

	b.SetKeep("evacuate-running", true)
	state.Start()
	count := func() int {
		n := 0
		for _, c := range b.Calls() {
			if c == "evacuate-running pg-1/2 ig-1@cell-1" {
				n++
			}
		}
		return n
	}
	// Synced at once, and again at the short interval while the BBS keeps the container.
	require.Eventually(t, func() bool { return count() >= 3 }, 5*time.Second, 5*time.Millisecond)
	require.Empty(t, e.Calls())

	b.SetKeep("evacuate-running", false)
	require.Eventually(t, func() bool { return contains(e.Calls(), "delete ig-1") }, 5*time.Second, 5*time.Millisecond)
}
