package handlers

import (
	"context"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"drover.dev/executor"
	"drover.dev/lib/grpcserver"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/internal/fakeexec"
	"drover.dev/rep/translate"
)

var testCell = Cell{ID: "cell-1", Zone: "z1", PlacementTags: []string{"gpu"}, OptionalPlacementTags: []string{"ssd"}}

var providers = []*modelsv1.RootFSProvider{{Name: "preloaded", Properties: []string{"busybox"}}, {Name: "docker"}}

// serve runs the service on a bufconn gRPC server and returns a client.
func serve(t *testing.T, e *fakeexec.Client) (repv1.RepServiceClient, *Server) {
	t.Helper()
	return serveWith(t, e, nil)
}

// serveWith is serve with an evacuation state (nil: the rep cannot evacuate).
func serveWith(t *testing.T, e *fakeexec.Client, evac Evacuation) (repv1.RepServiceClient, *Server) {
	t.Helper()
	api := New(testCell, e, evac, nil)
	srv, _ := grpcserver.NewServer(nil)
	api.Register(srv)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///rep", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	require.NoError(t, err)
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		api.Wait()
	})
	return repv1.NewRepServiceClient(conn), api
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func lrpWork(pg string, index, memory int32, rootfs string) *repv1.LRPWork {
	return &repv1.LRPWork{ProcessGuid: pg, Index: index, Domain: "cf-apps", Rootfs: rootfs, PlacementTags: []string{"gpu"},
		Resource: &modelsv1.Resource{MemoryMb: memory, DiskMb: 10, MaxPids: 64}}
}

func guidsOf(lrps []*repv1.LRPWork) []string {
	var out []string
	for _, w := range lrps {
		out = append(out, w.GetProcessGuid())
	}
	sort.Strings(out)
	return out
}

func TestPerform(t *testing.T) {
	t.Run("allocates instances and tasks with their tags", func(t *testing.T) {
		e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
		client, _ := serve(t, e)
		resp, err := client.Perform(ctxT(t), &repv1.PerformRequest{
			CellId: "cell-1",
			Lrps:   []*repv1.LRPWork{lrpWork("pg-a", 3, 100, "preloaded:busybox")},
			Tasks:  []*repv1.TaskWork{{TaskGuid: "task-1", Domain: "cf-tasks", Rootfs: "docker://busybox", Resource: &modelsv1.Resource{MemoryMb: 50}}},
		})
		require.NoError(t, err)
		require.Empty(t, resp.GetFailedLrps())
		require.Empty(t, resp.GetFailedTasks())

		containers, _ := e.List(context.Background())
		require.Len(t, containers, 2)
		var lrp, task executor.Container
		for _, c := range containers {
			if c.Guid == "task-1" {
				task = c
			} else {
				lrp = c
			}
		}
		require.Len(t, lrp.Guid, translate.InstanceGuidLength)
		require.Equal(t, executor.Resource{MemoryMB: 100, DiskMB: 10, MaxPids: 64}, lrp.Resource)
		require.Equal(t, map[string]string{
			executor.TagLifecycle: "lrp", executor.TagDomain: "cf-apps", executor.TagProcessGuid: "pg-a",
			executor.TagProcessIndex: "3", executor.TagInstanceGuid: lrp.Guid, executor.TagPlacementTags: `["gpu"]`,
			executor.TagVolumeDrivers: `[]`, executor.TagRootFS: "preloaded:busybox",
		}, lrp.Tags)
		require.Equal(t, "task", task.Tags[executor.TagLifecycle])
		require.Equal(t, "cf-tasks", task.Tags[executor.TagDomain])
		require.Empty(t, task.Tags[executor.TagProcessGuid])
	})

	t.Run("memory admission takes the biggest first", func(t *testing.T) {
		e := fakeexec.New(executor.Resources{MemoryMB: 300, DiskMB: 1000, Containers: 10}, providers...)
		client, _ := serve(t, e)
		resp, err := client.Perform(ctxT(t), &repv1.PerformRequest{Lrps: []*repv1.LRPWork{
			lrpWork("small", 0, 100, "preloaded:busybox"),
			lrpWork("big", 0, 250, "preloaded:busybox"),
			lrpWork("tiny", 0, 50, "preloaded:busybox"),
		}})
		require.NoError(t, err)
		require.Equal(t, []string{"small"}, guidsOf(resp.GetFailedLrps()))
		containers, _ := e.List(context.Background())
		require.Len(t, containers, 2)
	})

	t.Run("unknown rootfs is refused", func(t *testing.T) {
		e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
		client, _ := serve(t, e)
		resp, err := client.Perform(ctxT(t), &repv1.PerformRequest{
			Lrps:  []*repv1.LRPWork{lrpWork("nope", 0, 10, "preloaded:nope"), lrpWork("oci", 0, 10, "oci://x"), lrpWork("ok", 0, 10, "docker://nginx")},
			Tasks: []*repv1.TaskWork{{TaskGuid: "t", Rootfs: "preloaded:nope"}},
		})
		require.NoError(t, err)
		require.Equal(t, []string{"nope", "oci"}, guidsOf(resp.GetFailedLrps()))
		require.Len(t, resp.GetFailedTasks(), 1)
	})

	t.Run("another cell's work is all returned", func(t *testing.T) {
		e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
		client, _ := serve(t, e)
		resp, err := client.Perform(ctxT(t), &repv1.PerformRequest{CellId: "cell-2",
			Lrps:  []*repv1.LRPWork{lrpWork("a", 0, 10, "preloaded:busybox")},
			Tasks: []*repv1.TaskWork{{TaskGuid: "t", Rootfs: "preloaded:busybox"}}})
		require.NoError(t, err)
		require.Len(t, resp.GetFailedLrps(), 1)
		require.Len(t, resp.GetFailedTasks(), 1)
		require.Empty(t, e.Calls())
	})

	t.Run("allocation failures come back", func(t *testing.T) {
		e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 15, Containers: 10}, providers...)
		e.Put(executor.Container{Guid: "dup", State: executor.StateRunning})
		client, _ := serve(t, e)
		resp, err := client.Perform(ctxT(t), &repv1.PerformRequest{
			Lrps:  []*repv1.LRPWork{lrpWork("a", 0, 10, "preloaded:busybox"), lrpWork("b", 0, 10, "preloaded:busybox")},
			Tasks: []*repv1.TaskWork{{TaskGuid: "dup", Rootfs: "preloaded:busybox"}},
		})
		require.NoError(t, err)
		require.Len(t, resp.GetFailedLrps(), 1, "the second instance does not fit the disk")
		require.Len(t, resp.GetFailedTasks(), 1, "the task guid is taken")
	})
}

func TestState(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 2000, Containers: 10}, providers...)
	lrpTags := func(pg, index, guid string) map[string]string {
		return map[string]string{executor.TagLifecycle: "lrp", executor.TagProcessGuid: pg, executor.TagProcessIndex: index,
			executor.TagInstanceGuid: guid, executor.TagDomain: "d", executor.TagRootFS: "preloaded:busybox", executor.TagPlacementTags: `["gpu"]`}
	}
	res := executor.Resource{MemoryMB: 100, DiskMB: 100}
	e.Put(executor.Container{Guid: "a", State: executor.StateReserved, Resource: res, Tags: lrpTags("pg", "0", "a")})
	e.Put(executor.Container{Guid: "b", State: executor.StateCreated, Resource: res, Tags: lrpTags("pg", "1", "b")})
	e.Put(executor.Container{Guid: "c", State: executor.StateRunning, Resource: res, Tags: lrpTags("pg", "2", "c")})
	e.Put(executor.Container{Guid: "d", State: executor.StateCompleted, Resource: res, Tags: lrpTags("pg", "3", "d"), RunResult: executor.RunResult{Failed: true}})
	e.Put(executor.Container{Guid: "e", State: executor.StateCompleted, Resource: res, Tags: lrpTags("pg", "4", "e"), RunResult: executor.RunResult{Stopped: true}})
	e.Put(executor.Container{Guid: "t1", State: executor.StateInitializing, Resource: res, Tags: map[string]string{executor.TagLifecycle: "task", executor.TagDomain: "td"}})
	e.Put(executor.Container{Guid: "t2", State: executor.StateCompleted, Resource: res, Tags: map[string]string{executor.TagLifecycle: "task"}, RunResult: executor.RunResult{Failed: true}})
	client, _ := serve(t, e)

	st, err := client.State(ctxT(t), &repv1.StateRequest{})
	require.NoError(t, err)
	require.Equal(t, "cell-1", st.GetCellId())
	require.Equal(t, "z1", st.GetZone())
	require.Equal(t, int32(1000), st.GetTotalResources().GetMemoryMb())
	require.Equal(t, int32(300), st.GetAvailableResources().GetMemoryMb())
	require.Equal(t, int32(1300), st.GetAvailableResources().GetDiskMb())
	require.Equal(t, int32(3), st.GetAvailableResources().GetContainers())
	require.Equal(t, int32(3), st.GetStartCount(), "reserved + created + initializing")
	require.Equal(t, []string{"gpu"}, st.GetPlacementTags())
	require.Equal(t, []string{"ssd"}, st.GetOptionalPlacementTags())
	require.False(t, st.GetEvacuating())
	require.Len(t, st.GetRootfsProviders(), 2)

	states := map[string]string{}
	for _, l := range st.GetLrps() {
		states[l.GetInstanceGuid()] = l.GetState()
		require.Equal(t, "pg", l.GetProcessGuid())
		require.Equal(t, "preloaded:busybox", l.GetRootfs())
		require.Equal(t, []string{"gpu"}, l.GetPlacementTags())
		require.Equal(t, int32(100), l.GetResource().GetMemoryMb())
	}
	require.Equal(t, map[string]string{"a": "CLAIMED", "b": "CLAIMED", "c": "RUNNING", "d": "CRASHED", "e": "SHUTDOWN"}, states)
	require.Len(t, st.GetTasks(), 2)
	require.Equal(t, "RUNNING", st.GetTasks()[0].GetState())
	require.Equal(t, "td", st.GetTasks()[0].GetDomain())
	require.Equal(t, "COMPLETED", st.GetTasks()[1].GetState())
	require.True(t, st.GetTasks()[1].GetFailed())

	e.SetUnhealthy(true)
	_, err = client.State(ctxT(t), &repv1.StateRequest{})
	require.Equal(t, codes.Unavailable, status.Code(err))
}

func TestStopLRPInstance(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
	e.Put(executor.Container{Guid: "ig", State: executor.StateRunning, Tags: map[string]string{executor.TagLifecycle: "lrp", executor.TagProcessGuid: "pg"}})
	client, _ := serve(t, e)

	_, err := client.StopLRPInstance(ctxT(t), &repv1.StopLRPInstanceRequest{ProcessGuid: "pg"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = client.StopLRPInstance(ctxT(t), &repv1.StopLRPInstanceRequest{ProcessGuid: "pg", InstanceGuid: "missing"})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = client.StopLRPInstance(ctxT(t), &repv1.StopLRPInstanceRequest{ProcessGuid: "other", InstanceGuid: "ig"})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.Empty(t, e.Calls())

	_, err = client.StopLRPInstance(ctxT(t), &repv1.StopLRPInstanceRequest{ProcessGuid: "pg", InstanceGuid: "ig"})
	require.NoError(t, err)
	require.Equal(t, []string{"stop ig"}, e.Calls())
}

func TestCancelTask(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
	e.Put(executor.Container{Guid: "t1", State: executor.StateRunning, Tags: map[string]string{executor.TagLifecycle: "task"}})
	client, _ := serve(t, e)

	_, err := client.CancelTask(ctxT(t), &repv1.CancelTaskRequest{})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = client.CancelTask(ctxT(t), &repv1.CancelTaskRequest{TaskGuid: "t1"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := e.Get(context.Background(), "t1"); return err != nil }, 5*time.Second, 5*time.Millisecond)
	_, err = client.CancelTask(ctxT(t), &repv1.CancelTaskRequest{TaskGuid: "unknown"})
	require.NoError(t, err, "an unknown task counts as cancelled")
}

func TestPingAndContainerMetrics(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
	e.Put(executor.Container{Guid: "ig", State: executor.StateRunning, Resource: executor.Resource{MemoryMB: 64},
		Tags: map[string]string{executor.TagLifecycle: "lrp", executor.TagProcessGuid: "pg", executor.TagProcessIndex: "4"}})
	e.Put(executor.Container{Guid: "t1", State: executor.StateRunning, Tags: map[string]string{executor.TagLifecycle: "task"}})
	client, _ := serve(t, e)

	ping, err := client.Ping(ctxT(t), &repv1.PingRequest{})
	require.NoError(t, err)
	require.Equal(t, "cell-1", ping.GetCellId())

	m, err := client.ContainerMetrics(ctxT(t), &repv1.ContainerMetricsRequest{})
	require.NoError(t, err)
	require.Equal(t, "cell-1", m.GetCellId())
	require.Len(t, m.GetMetrics(), 2)
	require.Equal(t, "pg", m.GetMetrics()[0].GetProcessGuid())
	require.Equal(t, int32(4), m.GetMetrics()[0].GetIndex())
	require.Equal(t, uint64(64<<20), m.GetMetrics()[0].GetMemoryQuotaBytes())
	require.Equal(t, "t1", m.GetMetrics()[1].GetTaskGuid())
}
