package handlers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/evacuation"
	"drover.dev/rep/internal/fakeexec"
)

func TestEvacuate(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
	state := evacuation.NewState(nil)
	client, _ := serveWith(t, e, state)

	before, err := client.State(ctxT(t), &repv1.StateRequest{})
	require.NoError(t, err)
	require.False(t, before.GetEvacuating())

	resp, err := client.Evacuate(ctxT(t), &repv1.EvacuateRequest{})
	require.NoError(t, err)
	require.False(t, resp.GetAlreadyEvacuating())
	require.True(t, state.Evacuating())
	select {
	case <-state.Started():
	default:
		t.Fatal("evacuation did not start")
	}

	again, err := client.Evacuate(ctxT(t), &repv1.EvacuateRequest{})
	require.NoError(t, err)
	require.True(t, again.GetAlreadyEvacuating())

	after, err := client.State(ctxT(t), &repv1.StateRequest{})
	require.NoError(t, err)
	require.True(t, after.GetEvacuating())
}

func TestEvacuateWithoutEvacuationIsRefused(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
	client, _ := serve(t, e)
	_, err := client.Evacuate(ctxT(t), &repv1.EvacuateRequest{})
	require.Equal(t, codes.Unimplemented, status.Code(err))
}

func TestPerformWhileEvacuatingRefusesAllWork(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10}, providers...)
	state := evacuation.NewState(nil)
	state.Start()
	client, _ := serveWith(t, e, state)
	lrps := []*repv1.LRPWork{lrpWork("pg-a", 0, 100, "preloaded:busybox"), lrpWork("pg-b", 1, 100, "docker://busybox")}
	tasks := []*repv1.TaskWork{{TaskGuid: "task-1", Domain: "cf-tasks", Rootfs: "docker://busybox", Resource: &modelsv1.Resource{MemoryMb: 50}}}
	resp, err := client.Perform(ctxT(t), &repv1.PerformRequest{CellId: "cell-1", Lrps: lrps, Tasks: tasks})
	require.NoError(t, err)
	require.Equal(t, []string{"pg-a", "pg-b"}, guidsOf(resp.GetFailedLrps()))
	require.Len(t, resp.GetFailedTasks(), 1)
	require.Equal(t, "task-1", resp.GetFailedTasks()[0].GetTaskGuid())
	require.Empty(t, e.Calls(), "nothing is allocated")
}
