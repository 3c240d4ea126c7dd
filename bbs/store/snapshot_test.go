package store_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// snapshotMessages takes a snapshot and returns its messages in order.
func snapshotMessages(t testing.TB, s *store.Postgres) []*bbsv1.SnapshotResponse {
	t.Helper()
	var msgs []*bbsv1.SnapshotResponse
	require.NoError(t, s.Snapshot(testContext(t), func(m *bbsv1.SnapshotResponse) error {
		msgs = append(msgs, m)
		return nil
	}))
	return msgs
}

// mergeSnapshot joins the messages of a snapshot into one, checking their shape: the
// first carries the time, domains and cells; each later one carries one kind of row,
// at most a batch of it, in the order scheduling infos, actual LRPs, tasks.
func mergeSnapshot(t testing.TB, msgs []*bbsv1.SnapshotResponse) *bbsv1.SnapshotResponse {
	t.Helper()
	require.NotEmpty(t, msgs)
	merged := proto.CloneOf(msgs[0])
	require.NotZero(t, merged.GetTakenAt(), "first message carries taken_at")
	require.Empty(t, merged.GetSchedulingInfos())
	require.Empty(t, merged.GetActualLrps())
	require.Empty(t, merged.GetTasks())
	lastKind := 0
	for i, m := range msgs[1:] {
		require.Zero(t, m.GetTakenAt(), "message %d", i+1)
		require.Empty(t, m.GetFreshDomains(), "message %d", i+1)
		require.Empty(t, m.GetCells(), "message %d", i+1)
		kind, n := 0, 0
		for k, rows := range []int{len(m.GetSchedulingInfos()), len(m.GetActualLrps()), len(m.GetTasks())} {
			if rows > 0 {
				require.Zero(t, kind, "message %d carries more than one kind of row", i+1)
				kind, n = k+1, rows
			}
		}
		require.NotZero(t, kind, "message %d is empty", i+1)
		require.LessOrEqual(t, n, store.SnapshotBatchSize, "message %d", i+1)
		require.GreaterOrEqual(t, kind, lastKind, "message %d is out of order", i+1)
		lastKind = kind
		merged.SchedulingInfos = append(merged.SchedulingInfos, m.GetSchedulingInfos()...)
		merged.ActualLrps = append(merged.ActualLrps, m.GetActualLrps()...)
		merged.Tasks = append(merged.Tasks, m.GetTasks()...)
	}
	return merged
}

// takeSnapshot is one merged snapshot.
func takeSnapshot(t testing.TB, s *store.Postgres) *bbsv1.SnapshotResponse {
	t.Helper()
	return mergeSnapshot(t, snapshotMessages(t, s))
}

// batchSizes lists, per message after the first, the number of rows it carries.
func batchSizes(msgs []*bbsv1.SnapshotResponse) []int {
	sizes := make([]int, 0, len(msgs))
	for _, m := range msgs[1:] {
		sizes = append(sizes, len(m.GetSchedulingInfos())+len(m.GetActualLrps())+len(m.GetTasks()))
	}
	return sizes
}

// inParallel runs fn(0..n-1) on a few goroutines and fails the test on any error.
func inParallel(t testing.TB, n int, fn func(i int) error) {
	t.Helper()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := atomic.Int64{}
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, errors.Join(func() (all []error) {
		for err := range errs {
			all = append(all, err)
		}
		return all
	}()...))
}

func taskDefinition(callbackURL string) *modelsv1.TaskDefinition {
	return &modelsv1.TaskDefinition{
		Rootfs:                "preloaded:cflinuxfs4",
		Env:                   []*modelsv1.EnvironmentVariable{{Name: "DB_PASSWORD", Value: secretEnvValue}},
		Action:                &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "vcap"}}},
		MemoryMb:              64,
		CompletionCallbackUrl: callbackURL,
		Annotation:            "task annotation",
	}
}

func TestSnapshotContents(t *testing.T) {
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)

	require.NoError(t, s.UpsertDomain(ctx, "forever", 0))
	require.NoError(t, s.UpsertDomain(ctx, "ten-seconds", 10*time.Second))
	require.NoError(t, s.UpsertDomain(ctx, "one-second", time.Second))
	live := &modelsv1.CellPresence{CellId: "cell-live", RepAddress: "10.0.0.1:1800", Zone: "z1",
		Capacity: &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 2048, Containers: 10}}
	require.NoError(t, s.HeartbeatCell(ctx, live, time.Minute))
	require.NoError(t, s.HeartbeatCell(ctx, &modelsv1.CellPresence{CellId: "cell-gone"}, time.Second))

	desire(t, s, newDesiredLRP("app-a", 2))
	desire(t, s, newDesiredLRP("app-b", 1))
	_, err := s.ClaimActualLRP(ctx, "app-a", 0, instanceKey("i-0", "cell-live"))
	require.NoError(t, err)
	_, err = s.StartActualLRP(ctx, &modelsv1.ActualLRPKey{ProcessGuid: "app-a", Index: 0, Domain: "cf-apps"},
		instanceKey("i-0", "cell-live"), netInfo("10.0.0.1"), store.StartOptions{Routable: true})
	require.NoError(t, err)

	_, err = s.DesireTask(ctx, "task-callback", "cf-tasks", taskDefinition("https://cc.example.com/done"))
	require.NoError(t, err)
	_, err = s.DesireTask(ctx, "task-plain", "cf-tasks", taskDefinition(""))
	require.NoError(t, err)
	_, _, err = s.StartTask(ctx, "task-plain", "cell-live")
	require.NoError(t, err)

	clock.Advance(5 * time.Second)
	snap := takeSnapshot(t, s)

	require.Equal(t, clock.Now().UnixNano(), snap.GetTakenAt())
	require.Equal(t, []string{"forever", "ten-seconds"}, snap.GetFreshDomains())
	require.Len(t, snap.GetCells(), 1)
	require.Equal(t, "cell-live", snap.GetCells()[0].GetCellId())
	require.Equal(t, "10.0.0.1:1800", snap.GetCells()[0].GetRepAddress())
	require.Equal(t, int32(1024), snap.GetCells()[0].GetCapacity().GetMemoryMb())

	infos, err := s.ListSchedulingInfos(ctx, store.DesiredLRPFilter{})
	require.NoError(t, err)
	requireProtosEqual(t, infos, snap.GetSchedulingInfos())
	require.Equal(t, []string{"blue"}, snap.GetSchedulingInfos()[0].GetPlacementTags())
	require.NotEmpty(t, snap.GetSchedulingInfos()[0].GetRoutes())

	actuals, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{})
	require.NoError(t, err)
	require.Len(t, actuals, 3)
	requireProtosEqual(t, actuals, snap.GetActualLrps())
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, snap.GetActualLrps()[0].GetState())
	require.Equal(t, "10.0.0.1", snap.GetActualLrps()[0].GetNetInfo().GetAddress())

	tasks, err := s.ListTasks(ctx, store.TaskFilter{})
	require.NoError(t, err)
	require.Len(t, snap.GetTasks(), 2)
	for i, want := range tasks {
		got := snap.GetTasks()[i]
		url := want.GetTaskDefinition().GetCompletionCallbackUrl()
		want.TaskDefinition = nil
		if url != "" {
			want.TaskDefinition = &modelsv1.TaskDefinition{CompletionCallbackUrl: url}
		}
		requireProtoEqual(t, want, got)
	}
	require.Equal(t, "https://cc.example.com/done", snap.GetTasks()[0].GetTaskDefinition().GetCompletionCallbackUrl())
	require.Nil(t, snap.GetTasks()[1].GetTaskDefinition(), "a task without a callback has no definition")
	require.Equal(t, modelsv1.TaskState_TASK_STATE_RUNNING, snap.GetTasks()[1].GetState())
	require.Equal(t, "cell-live", snap.GetTasks()[1].GetCellId())
}

func TestSnapshotOfAnEmptyStore(t *testing.T) {
	s := storetest.NewStore(t)
	msgs := snapshotMessages(t, s)
	require.Len(t, msgs, 1, "only the first message")
	require.NotZero(t, msgs[0].GetTakenAt())
	require.Empty(t, msgs[0].GetFreshDomains())
	require.Empty(t, msgs[0].GetCells())
}

func TestSnapshotBatches(t *testing.T) {
	url := storetest.NewDatabase(t)
	s := storetest.NewStoreWithConfig(t, store.Config{URL: url})
	ctx := testContext(t)
	const lrps, actuals, tasks = 1001, 2500, 1001
	seedRunningActualLRPs(t, url, actuals)
	inParallel(t, lrps, func(i int) error {
		_, err := s.DesireLRP(ctx, newDesiredLRP(fmt.Sprintf("lrp-%04d", i), 0))
		return err
	})
	inParallel(t, tasks, func(i int) error {
		_, err := s.DesireTask(ctx, fmt.Sprintf("task-%04d", i), "cf-tasks", taskDefinition(fmt.Sprintf("https://cc/%d", i)))
		return err
	})

	msgs := snapshotMessages(t, s)
	require.Equal(t, []int{1000, 1, 1000, 1000, 500, 1000, 1}, batchSizes(msgs))
	snap := mergeSnapshot(t, msgs)
	require.Len(t, snap.GetSchedulingInfos(), lrps)
	require.Len(t, snap.GetActualLrps(), actuals)
	require.Len(t, snap.GetTasks(), tasks)
	require.Equal(t, "lrp-1000", snap.GetSchedulingInfos()[lrps-1].GetProcessGuid())
	require.Equal(t, "https://cc/1000", snap.GetTasks()[tasks-1].GetTaskDefinition().GetCompletionCallbackUrl())
}

// TestSnapshotIgnoresWritesCommittedWhileStreaming commits writes while the snapshot
// is paused between two batches of actual LRPs: none of them shows, not even the rows
// that come later in the stream, and rows deleted meanwhile still show.
func TestSnapshotIgnoresWritesCommittedWhileStreaming(t *testing.T) {
	s := storetest.NewStore(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app-old", 1500))
	require.NoError(t, s.UpsertDomain(ctx, "cf-apps", 0))

	wrote := false
	var msgs []*bbsv1.SnapshotResponse
	err := s.Snapshot(ctx, func(m *bbsv1.SnapshotResponse) error {
		msgs = append(msgs, m)
		if len(m.GetActualLrps()) > 0 && !wrote {
			wrote = true
			_, err := s.RemoveDesiredLRP(ctx, "app-old")
			require.NoError(t, err)
			desire(t, s, newDesiredLRP("app-zzz-new", 1500))
			require.NoError(t, s.UpsertDomain(ctx, "new-domain", 0))
			require.NoError(t, s.HeartbeatCell(ctx, &modelsv1.CellPresence{CellId: "new-cell"}, time.Minute))
			_, err = s.DesireTask(ctx, "new-task", "cf-tasks", taskDefinition(""))
			require.NoError(t, err)
		}
		return nil
	})
	require.NoError(t, err)
	require.True(t, wrote, "the writer ran during the snapshot")

	before := mergeSnapshot(t, msgs)
	require.Equal(t, []string{"cf-apps"}, before.GetFreshDomains())
	require.Empty(t, before.GetCells())
	require.Len(t, before.GetSchedulingInfos(), 1)
	require.Equal(t, "app-old", before.GetSchedulingInfos()[0].GetProcessGuid())
	require.Len(t, before.GetActualLrps(), 1500)
	for _, a := range before.GetActualLrps() {
		require.Equal(t, "app-old", a.GetProcessGuid())
	}
	require.Empty(t, before.GetTasks())

	after := takeSnapshot(t, s)
	require.Equal(t, []string{"cf-apps", "new-domain"}, after.GetFreshDomains())
	require.Len(t, after.GetCells(), 1)
	require.Len(t, after.GetSchedulingInfos(), 1)
	require.Equal(t, "app-zzz-new", after.GetSchedulingInfos()[0].GetProcessGuid())
	require.Len(t, after.GetActualLrps(), 1500)
	require.Len(t, after.GetTasks(), 1)
}

// TestSnapshotIsConsistentUnderConcurrentWriters desires and removes LRPs on other
// connections while snapshots stream, waiting for writes between batches; every
// snapshot must pair each LRP with exactly its instances' rows.
func TestSnapshotIsConsistentUnderConcurrentWriters(t *testing.T) {
	s := storetest.NewStore(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("seed", 1200))

	var commits atomic.Int64
	stop := make(chan struct{})
	var writers sync.WaitGroup
	writerErrs := make(chan error, 2)
	for w := range 2 {
		writers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				guid := fmt.Sprintf("writer-%d-%d", w, n)
				if _, err := s.DesireLRP(ctx, newDesiredLRP(guid, int32(1+(n*337)%1500))); err != nil {
					writerErrs <- err
					return
				}
				commits.Add(1)
				if n%2 == 1 {
					if _, err := s.RemoveDesiredLRP(ctx, guid); err != nil {
						writerErrs <- err
						return
					}
					commits.Add(1)
				}
			}
		})
	}
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		writers.Wait()
	})

	// waitForCommit polls until a writer committed after seen, with a deadline.
	waitForCommit := func(seen int64) error {
		deadline := time.Now().Add(30 * time.Second)
		for commits.Load() <= seen {
			if time.Now().After(deadline) {
				return errors.New("no writer committed within 30s")
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	}

	for range 5 {
		var msgs []*bbsv1.SnapshotResponse
		require.NoError(t, s.Snapshot(ctx, func(m *bbsv1.SnapshotResponse) error {
			msgs = append(msgs, m)
			return waitForCommit(commits.Load())
		}))
		snap := mergeSnapshot(t, msgs)
		rows := map[string]int32{}
		for _, a := range snap.GetActualLrps() {
			rows[a.GetProcessGuid()]++
		}
		for _, si := range snap.GetSchedulingInfos() {
			require.Equal(t, si.GetInstances(), rows[si.GetProcessGuid()], "rows of %s", si.GetProcessGuid())
			delete(rows, si.GetProcessGuid())
		}
		require.Empty(t, rows, "rows without a desired LRP")
	}
	close(stop)
	writers.Wait()
	close(writerErrs)
	for err := range writerErrs {
		require.NoError(t, err)
	}
}

func TestSnapshotReturnsTheEmitError(t *testing.T) {
	s := storetest.NewStore(t)
	desire(t, s, newDesiredLRP("app", 1500))
	stopped := errors.New("client went away")
	calls := 0
	err := s.Snapshot(testContext(t), func(m *bbsv1.SnapshotResponse) error {
		calls++
		if len(m.GetActualLrps()) > 0 {
			return stopped
		}
		return nil
	})
	require.ErrorIs(t, err, stopped)
	require.Equal(t, stopped, err, "the emit error comes back unchanged")
	require.Equal(t, 3, calls, "first message, scheduling infos, first actual batch")
	require.Zero(t, s.Stat().AcquiredConns(), "the snapshot's connection went back to the pool")
	takeSnapshot(t, s) // the store still works
}
