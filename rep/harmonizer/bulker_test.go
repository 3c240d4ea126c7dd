package harmonizer

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/rep/internal/fakeexec"
)

func TestPlan(t *testing.T) {
	ordinary := modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY
	lrp := func(guid string, presence modelsv1.ActualLRPPresence) *modelsv1.ActualLRP {
		return &modelsv1.ActualLRP{ProcessGuid: "pg", Index: 0, InstanceGuid: guid, CellId: cellID, Presence: presence}
	}
	task := func(guid string, state modelsv1.TaskState) *modelsv1.Task {
		return &modelsv1.Task{TaskGuid: guid, State: state, CellId: cellID}
	}
	running := modelsv1.TaskState_TASK_STATE_RUNNING
	tests := []struct {
		name string
		snap Snapshot
		want []Operation
	}{
		{name: "nothing", snap: Snapshot{}, want: []Operation{}},
		{
			name: "every container gets an operation, known to the BBS or not",
			snap: Snapshot{Containers: []executor.Container{{Guid: "a"}, {Guid: "b"}}, LRPs: []*modelsv1.ActualLRP{lrp("a", ordinary)}},
			want: []Operation{{Guid: "a", Kind: OpContainer}, {Guid: "b", Kind: OpContainer}},
		},
		{
			name: "ordinary instance without container is residual",
			snap: Snapshot{LRPs: []*modelsv1.ActualLRP{lrp("x", ordinary), lrp("y", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED)}},
			want: []Operation{{Guid: "x", Kind: OpResidualLRP, LRP: lrp("x", ordinary)}, {Guid: "y", Kind: OpResidualLRP, LRP: lrp("y", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED)}},
		},
		{
			name: "suspect records are left alone",
			snap: Snapshot{LRPs: []*modelsv1.ActualLRP{lrp("s", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT)}},
			want: []Operation{},
		},
		{
			name: "evacuating record without container is residual; with its container it is not",
			snap: Snapshot{
				Containers: []executor.Container{{Guid: "kept"}},
				LRPs:       []*modelsv1.ActualLRP{lrp("e", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING), lrp("kept", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING)},
			},
			want: []Operation{{Guid: "kept", Kind: OpContainer}, {Guid: "e", Kind: OpResidualEvacuatingLRP, LRP: lrp("e", modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING)}},
		},
		{
			name: "running task without container is residual; completed ones are not",
			snap: Snapshot{Containers: []executor.Container{{Guid: "t1"}}, Tasks: []*modelsv1.Task{task("t1", running), task("t2", running), task("t3", modelsv1.TaskState_TASK_STATE_COMPLETED)}},
			want: []Operation{{Guid: "t1", Kind: OpContainer}, {Guid: "t2", Kind: OpResidualTask}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap)
			require.Len(t, got, len(tt.want))
			for i := range got {
				require.Equal(t, tt.want[i].Guid, got[i].Guid)
				require.Equal(t, tt.want[i].Kind, got[i].Kind)
				require.Equal(t, tt.want[i].LRP.GetInstanceGuid(), got[i].LRP.GetInstanceGuid())
			}
		})
	}
}

func newHarmonizer(t *testing.T) (*Harmonizer, *fakeBBS, *fakeexec.Client) {
	t.Helper()
	b := newFakeBBS()
	e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
	return New(Config{CellID: cellID, Zone: "z1", PollingInterval: time.Hour}, e, b, nil, nil), b, e
}

func TestResidualOperations(t *testing.T) {
	t.Run("instance without container is removed", func(t *testing.T) {
		h, b, _ := newHarmonizer(t)
		h.processResidualLRP(context.Background(), &modelsv1.ActualLRP{ProcessGuid: "pg", Index: 1, InstanceGuid: "ig"})
		require.Equal(t, []string{"remove pg/1 ig@cell-1"}, b.Calls())
	})
	t.Run("instance whose container appeared since is kept", func(t *testing.T) {
		h, b, e := newHarmonizer(t)
		e.Put(lrpContainer(executor.StateReserved))
		h.processResidualLRP(context.Background(), &modelsv1.ActualLRP{ProcessGuid: "pg-1", Index: 2, InstanceGuid: "ig-1"})
		require.Empty(t, b.Calls())
	})
	t.Run("task without container is failed", func(t *testing.T) {
		h, b, _ := newHarmonizer(t)
		h.processResidualTask(context.Background(), "t9")
		require.Equal(t, []string{`complete t9@cell-1 failed=true reason="task container does not exist" result=0 bytes`}, b.Calls())
	})
	t.Run("task whose container exists is kept", func(t *testing.T) {
		h, b, e := newHarmonizer(t)
		e.Put(taskContainer(executor.StateRunning))
		h.processResidualTask(context.Background(), "task-1")
		require.Empty(t, b.Calls())
	})
}

func TestSyncSkipsTheCycleWhenAFetchFails(t *testing.T) {
	h, b, e := newHarmonizer(t)
	e.Put(lrpContainer(executor.StateInitializing))
	b.errs["list-tasks"] = unavailable
	q := NewQueue(context.Background(), 4)
	h.Sync(context.Background(), q)
	q.Wait()
	require.NotContains(t, b.Calls(), "claim pg-1/2 ig-1@cell-1")
}

func TestSyncProcessesContainersAndResiduals(t *testing.T) {
	h, b, e := newHarmonizer(t)
	e.Put(lrpContainer(executor.StateInitializing))
	b.lrps = []*modelsv1.ActualLRP{{ProcessGuid: "pg-gone", Index: 0, InstanceGuid: "ig-gone", CellId: cellID}}
	b.tasks["t-gone"] = &modelsv1.Task{TaskGuid: "t-gone", State: modelsv1.TaskState_TASK_STATE_RUNNING, CellId: cellID}
	q := NewQueue(context.Background(), 4)
	h.Sync(context.Background(), q)
	q.Wait()
	calls := b.Calls()
	require.Contains(t, calls, "claim pg-1/2 ig-1@cell-1")
	require.Contains(t, calls, "remove pg-gone/0 ig-gone@cell-1")
	require.Contains(t, calls, `complete t-gone@cell-1 failed=true reason="task container does not exist" result=0 bytes`)
}

func TestQueueRunsOnePerKeyAndKeepsOnlyTheNewestPending(t *testing.T) {
	q := NewQueue(context.Background(), 4)
	release := make(chan struct{})
	started := make(chan struct{})
	var mu sync.Mutex
	var ran []string
	record := func(name string) func(context.Context) {
		return func(context.Context) { mu.Lock(); ran = append(ran, name); mu.Unlock() }
	}
	q.Push("g", func(context.Context) {
		close(started)
		<-release
		record("first")(nil)
	})
	<-started
	q.Push("g", record("second"))
	q.Push("g", record("third"))
	q.Push("other", record("other"))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(ran) == 1 }, 5*time.Second, 5*time.Millisecond)
	close(release)
	q.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.ElementsMatch(t, []string{"other", "first", "third"}, ran)
	require.Less(t, indexOf(ran, "first"), indexOf(ran, "third"))
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestRunSyncsAtStartAndConsumesEvents(t *testing.T) {
	h, b, e := newHarmonizer(t)
	e.Put(lrpContainer(executor.StateRunning))
	process := ifrit.Invoke(h)
	t.Cleanup(func() {
		process.Signal(syscall.SIGTERM)
		<-process.Wait()
	})
	// The initial sync starts the running instance.
	require.Eventually(t, func() bool { return contains(b.Calls(), "start pg-1/2 ig-1") }, 5*time.Second, 10*time.Millisecond)

	// An event for a new reserved container claims it.
	b.desired["pg-1"] = desiredLRP()
	reserved := lrpContainer(executor.StateReserved)
	reserved.Guid = "ig-2"
	reserved.Tags[executor.TagInstanceGuid] = "ig-2"
	e.Put(reserved)
	e.Emit(executor.Event{Type: executor.EventReserved, Container: reserved})
	require.Eventually(t, func() bool { return contains(e.Calls(), "run ig-2") }, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, b.Calls(), "claim pg-1/2 ig-2@cell-1")

	process.Signal(syscall.SIGTERM)
	select {
	case err := <-process.Wait():
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("harmonizer did not stop")
	}
}

func contains(s []string, v string) bool { return indexOf(s, v) >= 0 }
