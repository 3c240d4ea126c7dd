package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// TestImageCredentialsOnlyForCells: over real mTLS, the cell an LRP or task is placed on
// reads its image credentials (it pulls the image); an operator's get, and every list,
// carry none.
func TestImageCredentialsOnlyForCells(t *testing.T) {
	const user, password = "registry-user", "registry-password-61c2"
	h := newHarness(t)
	as := serveGuarded(t, h)
	h.registerCell("cell-1")

	lrp := desiredLRP("web", 1)
	lrp.Rootfs = "docker://127.0.0.1:5000/drover/web#v1"
	lrp.ImageUsername, lrp.ImagePassword = user, password
	_, err := h.client.DesireLRP(h.ctx(), &bbsv1.DesireLRPRequest{DesiredLrp: lrp})
	require.NoError(t, err)
	h.claim("web", 0, "cell-1")

	def := taskDefinition("")
	def.Rootfs = lrp.Rootfs
	def.ImageUsername, def.ImagePassword = user, password
	_, err = h.client.DesireTask(h.ctx(), &bbsv1.DesireTaskRequest{TaskGuid: "job", Domain: testDomain, TaskDefinition: def})
	require.NoError(t, err)
	cell, operator := as("cell:cell-1"), as("drover-client")
	_, err = cell.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: "job", CellId: "cell-1"})
	require.NoError(t, err)

	got, err := cell.GetDesiredLRP(h.ctx(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: "web"})
	require.NoError(t, err)
	require.Equal(t, user, got.GetDesiredLrp().GetImageUsername())
	require.Equal(t, password, got.GetDesiredLrp().GetImagePassword())
	task, err := cell.GetTask(h.ctx(), &bbsv1.GetTaskRequest{TaskGuid: "job"})
	require.NoError(t, err)
	require.Equal(t, password, task.GetTask().GetTaskDefinition().GetImagePassword())

	got, err = operator.GetDesiredLRP(h.ctx(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: "web"})
	require.NoError(t, err)
	require.Equal(t, lrp.Rootfs, got.GetDesiredLrp().GetRootfs())
	require.Empty(t, got.GetDesiredLrp().GetImageUsername())
	require.Empty(t, got.GetDesiredLrp().GetImagePassword())
	task, err = operator.GetTask(h.ctx(), &bbsv1.GetTaskRequest{TaskGuid: "job"})
	require.NoError(t, err)
	require.Empty(t, task.GetTask().GetTaskDefinition().GetImagePassword())

	list, err := operator.ListDesiredLRPs(h.ctx(), &bbsv1.ListDesiredLRPsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetDesiredLrps(), 1)
	require.Empty(t, list.GetDesiredLrps()[0].GetImagePassword())
	for _, c := range []*bbsv1.ListTasksRequest{{}, {CellId: "cell-1"}} {
		tasks, err := operator.ListTasks(h.ctx(), c)
		require.NoError(t, err)
		require.Len(t, tasks.GetTasks(), 1)
		require.Empty(t, tasks.GetTasks()[0].GetTaskDefinition().GetImagePassword())
	}
	tasks, err := cell.ListTasks(h.ctx(), &bbsv1.ListTasksRequest{CellId: "cell-1"})
	require.NoError(t, err)
	require.Len(t, tasks.GetTasks(), 1)
	require.Empty(t, tasks.GetTasks()[0].GetTaskDefinition().GetImagePassword())
}

// TestMalformedDockerRootfsIsInvalidArgument: the gRPC side of the same rule as the HTTP
// API's 400 (one validation for both).
func TestMalformedDockerRootfsIsInvalidArgument(t *testing.T) {
	h := newHarness(t)
	lrp := desiredLRP("web", 1)
	lrp.Rootfs = "docker:user/image"
	_, err := h.client.DesireLRP(h.ctx(), &bbsv1.DesireLRPRequest{DesiredLrp: lrp})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "invalid field rootfs: must be a docker image URL: docker: must be followed by //")

	def := taskDefinition("")
	def.Rootfs = "docker://"
	_, err = h.client.DesireTask(h.ctx(), &bbsv1.DesireTaskRequest{TaskGuid: "job", Domain: testDomain, TaskDefinition: def})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "invalid field task_definition.rootfs: must be a docker image URL: nothing after docker://")

	_, err = h.client.GetDesiredLRP(h.ctx(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: "web"})
	require.Equal(t, codes.NotFound, status.Code(err), "nothing was stored: %v", err)
}
