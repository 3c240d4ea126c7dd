package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/client"
	"drover.dev/bbs/server"
	"drover.dev/lib/authz"
	"drover.dev/lib/authz/authztest"
	"drover.dev/lib/grpcserver"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// callers are the identities of the acceptance table, by name, and the common names
// of their certificates.
var callers = []struct{ name, commonName string }{
	{"operator", "drover-client"},
	{"bbs", "bbs"},
	{"auctioneer", "auctioneer"},
	{"converger", "converger"},
	{"route-emitter", "route-emitter"},
	{"cell-1", "cell:cell-1"},
	{"stager", "stager"},
	{"empty-cell", "cell:"},
	{"stranger", "stranger"},
}

// Who is allowed what, for the table below.
var (
	ops        = []string{"operator"}
	opsCell    = []string{"operator", "cell-1"}
	everyone   = []string{"operator", "bbs", "auctioneer", "converger", "route-emitter", "cell-1", "stager"}
	opsStager  = []string{"operator", "stager"}
	opsEmitter = []string{"operator", "route-emitter"}
	opsConv    = []string{"operator", "converger"}
)

// world is what one call of the table acts on, made fresh (trusted) for each call so
// that no call sees another's effects: "lrp-TAG" index 0 RUNNING on cell-1, index 1
// UNCLAIMED; "far-TAG" index 0 CLAIMED by cell-2, index 1 RUNNING on cell-2; tasks
// "own-TAG" RUNNING on cell-1, "other-TAG" RUNNING on cell-2, "pend-TAG" PENDING.
type world struct{ tag string }

func (h *harness) world(tag string) world {
	h.t.Helper()
	h.desire("lrp-"+tag, 2)
	h.start("lrp-"+tag, 0, "cell-1")
	h.desire("far-"+tag, 2)
	h.claim("far-"+tag, 0, "cell-2")
	h.start("far-"+tag, 1, "cell-2")
	for _, prefix := range []string{"own-", "other-", "pend-", authz.StagingTaskPrefix} {
		h.desireTask(prefix+tag, "")
	}
	for guid, cell := range map[string]string{"own-" + tag: "cell-1", "other-" + tag: "cell-2"} {
		_, err := h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: guid, CellId: cell})
		require.NoError(h.t, err)
	}
	return world{tag: tag}
}

func (w world) lrp() string { return "lrp-" + w.tag }
func (w world) far() string { return "far-" + w.tag }
func (w world) key(guid string, index int32) *modelsv1.ActualLRPKey {
	return &modelsv1.ActualLRPKey{ProcessGuid: guid, Index: index, Domain: testDomain}
}

// ownKey is cell-1's instance of lrp index 0; farKey cell-2's instance of far's index.
func (w world) ownKey() *modelsv1.ActualLRPInstanceKey { return instanceKey(w.lrp(), 0, "cell-1") }
func (w world) farKey(index int32) *modelsv1.ActualLRPInstanceKey {
	return instanceKey(w.far(), index, "cell-2")
}

var testNetInfo = &modelsv1.ActualLRPNetInfo{Address: "10.0.0.9", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61009}}}

// authzCase is one row of the table: a call and who may make it.
type authzCase struct {
	name    string
	method  string
	allowed []string
	call    func(ctx context.Context, c *client.Client, w world) error
}

// drain receives a server stream until it ends or fails; a stream that delivered a
// message counts as allowed.
func drain[T any](s grpc.ServerStreamingClient[T], err error) error {
	if err != nil {
		return err
	}
	if _, err := s.Recv(); err != nil && err != io.EOF {
		return err
	}
	return nil
}

func bbsCases() []authzCase {
	lrp := func(name, method string, allowed []string, call func(ctx context.Context, c *client.Client, w world) error) authzCase {
		return authzCase{name: name, method: method, allowed: allowed, call: call}
	}
	startReq := func(w world, guid string, index int32, ik *modelsv1.ActualLRPInstanceKey) *bbsv1.StartActualLRPRequest {
		return &bbsv1.StartActualLRPRequest{ActualLrpKey: w.key(guid, index), ActualLrpInstanceKey: ik, ActualLrpNetInfo: testNetInfo}
	}
	return []authzCase{
		// DesiredLRPService
		lrp("DesireLRP", bbsv1.DesiredLRPService_DesireLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: desiredLRP("new-"+w.tag, 1)})
			return err
		}),
		lrp("UpdateDesiredLRP", bbsv1.DesiredLRPService_UpdateDesiredLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			annotation := "changed"
			_, err := c.UpdateDesiredLRP(ctx, &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: w.lrp(), Update: &modelsv1.DesiredLRPUpdate{Annotation: &annotation}})
			return err
		}),
		lrp("RemoveDesiredLRP", bbsv1.DesiredLRPService_RemoveDesiredLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RemoveDesiredLRP(ctx, &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: w.lrp()})
			return err
		}),
		lrp("GetDesiredLRP of work placed on cell-1", bbsv1.DesiredLRPService_GetDesiredLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.GetDesiredLRP(ctx, &bbsv1.GetDesiredLRPRequest{ProcessGuid: w.lrp()})
			return err
		}),
		lrp("GetDesiredLRP of work on cell-2 only", bbsv1.DesiredLRPService_GetDesiredLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.GetDesiredLRP(ctx, &bbsv1.GetDesiredLRPRequest{ProcessGuid: w.far()})
			return err
		}),
		lrp("ListDesiredLRPs", bbsv1.DesiredLRPService_ListDesiredLRPs_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ListDesiredLRPs(ctx, &bbsv1.ListDesiredLRPsRequest{})
			return err
		}),
		lrp("ListDesiredLRPSchedulingInfos", bbsv1.DesiredLRPService_ListDesiredLRPSchedulingInfos_FullMethodName, opsEmitter, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ListDesiredLRPSchedulingInfos(ctx, &bbsv1.ListDesiredLRPSchedulingInfosRequest{})
			return err
		}),
		lrp("GetDesiredLRPSchedulingInfo", bbsv1.DesiredLRPService_GetDesiredLRPSchedulingInfo_FullMethodName, opsEmitter, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.GetDesiredLRPSchedulingInfo(ctx, &bbsv1.GetDesiredLRPSchedulingInfoRequest{ProcessGuid: w.lrp()})
			return err
		}),
		lrp("ListDesiredLRPRoutingInfos", bbsv1.DesiredLRPService_ListDesiredLRPRoutingInfos_FullMethodName, opsEmitter, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ListDesiredLRPRoutingInfos(ctx, &bbsv1.ListDesiredLRPRoutingInfosRequest{})
			return err
		}),

		// ActualLRPService
		lrp("ListActualLRPs of cell-1", bbsv1.ActualLRPService_ListActualLRPs_FullMethodName, append(opsEmitter, "cell-1"), func(ctx context.Context, c *client.Client, w world) error {
			return drain(c.ListActualLRPs(ctx, &bbsv1.ListActualLRPsRequest{CellId: "cell-1"}))
		}),
		lrp("ListActualLRPs of every cell", bbsv1.ActualLRPService_ListActualLRPs_FullMethodName, opsEmitter, func(ctx context.Context, c *client.Client, w world) error {
			return drain(c.ListActualLRPs(ctx, &bbsv1.ListActualLRPsRequest{}))
		}),
		lrp("ListActualLRPs of cell-2", bbsv1.ActualLRPService_ListActualLRPs_FullMethodName, opsEmitter, func(ctx context.Context, c *client.Client, w world) error {
			return drain(c.ListActualLRPs(ctx, &bbsv1.ListActualLRPsRequest{CellId: "cell-2"}))
		}),
		lrp("ClaimActualLRP of an UNCLAIMED instance for cell-1", bbsv1.ActualLRPService_ClaimActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{ProcessGuid: w.lrp(), Index: 1, ActualLrpInstanceKey: instanceKey(w.lrp(), 1, "cell-1")})
			return err
		}),
		lrp("ClaimActualLRP of an instance CLAIMED by cell-2", bbsv1.ActualLRPService_ClaimActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{ProcessGuid: w.far(), Index: 0, ActualLrpInstanceKey: instanceKey(w.far(), 0, "cell-1")})
			return err
		}),
		lrp("ClaimActualLRP for cell-2", bbsv1.ActualLRPService_ClaimActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{ProcessGuid: w.lrp(), Index: 1, ActualLrpInstanceKey: instanceKey(w.lrp(), 1, "cell-2")})
			return err
		}),
		lrp("StartActualLRP of its own instance", bbsv1.ActualLRPService_StartActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.StartActualLRP(ctx, startReq(w, w.lrp(), 0, w.ownKey()))
			return err
		}),
		lrp("StartActualLRP of an UNCLAIMED instance", bbsv1.ActualLRPService_StartActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.StartActualLRP(ctx, startReq(w, w.lrp(), 1, instanceKey(w.lrp(), 1, "cell-1")))
			return err
		}),
		lrp("StartActualLRP of an instance CLAIMED by cell-2 (cross-cell start)", bbsv1.ActualLRPService_StartActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.StartActualLRP(ctx, startReq(w, w.far(), 0, instanceKey(w.far(), 0, "cell-1")))
			return err
		}),
		lrp("StartActualLRP with cell-2's key", bbsv1.ActualLRPService_StartActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.StartActualLRP(ctx, startReq(w, w.far(), 0, w.farKey(0)))
			return err
		}),
		lrp("CrashActualLRP of its own instance", bbsv1.ActualLRPService_CrashActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.CrashActualLRP(ctx, &bbsv1.CrashActualLRPRequest{ActualLrpKey: w.key(w.lrp(), 0), ActualLrpInstanceKey: w.ownKey(), ErrorMessage: "exited"})
			return err
		}),
		lrp("CrashActualLRP of cell-2's instance", bbsv1.ActualLRPService_CrashActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.CrashActualLRP(ctx, &bbsv1.CrashActualLRPRequest{ActualLrpKey: w.key(w.far(), 1), ActualLrpInstanceKey: w.farKey(1), ErrorMessage: "exited"})
			return err
		}),
		lrp("FailActualLRP", bbsv1.ActualLRPService_FailActualLRP_FullMethodName, []string{"operator", "auctioneer"}, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.FailActualLRP(ctx, &bbsv1.FailActualLRPRequest{ActualLrpKey: w.key(w.lrp(), 1), ErrorMessage: "no room"})
			return err
		}),
		lrp("RemoveActualLRP of its own instance", bbsv1.ActualLRPService_RemoveActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RemoveActualLRP(ctx, &bbsv1.RemoveActualLRPRequest{ProcessGuid: w.lrp(), Index: 0, ActualLrpInstanceKey: w.ownKey()})
			return err
		}),
		lrp("RemoveActualLRP of cell-2's instance", bbsv1.ActualLRPService_RemoveActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RemoveActualLRP(ctx, &bbsv1.RemoveActualLRPRequest{ProcessGuid: w.far(), Index: 1, ActualLrpInstanceKey: w.farKey(1)})
			return err
		}),
		lrp("RetireActualLRP", bbsv1.ActualLRPService_RetireActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RetireActualLRP(ctx, &bbsv1.RetireActualLRPRequest{ActualLrpKey: w.key(w.lrp(), 1)})
			return err
		}),
		lrp("EvacuateClaimedActualLRP of its own instance", bbsv1.ActualLRPService_EvacuateClaimedActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.EvacuateClaimedActualLRP(ctx, &bbsv1.EvacuateClaimedActualLRPRequest{ActualLrpKey: w.key(w.lrp(), 0), ActualLrpInstanceKey: w.ownKey()})
			return err
		}),
		lrp("EvacuateClaimedActualLRP of cell-2's instance", bbsv1.ActualLRPService_EvacuateClaimedActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.EvacuateClaimedActualLRP(ctx, &bbsv1.EvacuateClaimedActualLRPRequest{ActualLrpKey: w.key(w.far(), 0), ActualLrpInstanceKey: w.farKey(0)})
			return err
		}),
		lrp("EvacuateRunningActualLRP of its own instance", bbsv1.ActualLRPService_EvacuateRunningActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.EvacuateRunningActualLRP(ctx, &bbsv1.EvacuateRunningActualLRPRequest{ActualLrpKey: w.key(w.lrp(), 0), ActualLrpInstanceKey: w.ownKey(), ActualLrpNetInfo: testNetInfo})
			return err
		}),
		lrp("EvacuateRunningActualLRP of cell-2's instance", bbsv1.ActualLRPService_EvacuateRunningActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.EvacuateRunningActualLRP(ctx, &bbsv1.EvacuateRunningActualLRPRequest{ActualLrpKey: w.key(w.far(), 1), ActualLrpInstanceKey: w.farKey(1), ActualLrpNetInfo: testNetInfo})
			return err
		}),
		lrp("EvacuateStoppedActualLRP of its own instance", bbsv1.ActualLRPService_EvacuateStoppedActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.EvacuateStoppedActualLRP(ctx, &bbsv1.EvacuateStoppedActualLRPRequest{ActualLrpKey: w.key(w.lrp(), 0), ActualLrpInstanceKey: w.ownKey()})
			return err
		}),
		lrp("EvacuateStoppedActualLRP of cell-2's instance", bbsv1.ActualLRPService_EvacuateStoppedActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.EvacuateStoppedActualLRP(ctx, &bbsv1.EvacuateStoppedActualLRPRequest{ActualLrpKey: w.key(w.far(), 1), ActualLrpInstanceKey: w.farKey(1)})
			return err
		}),
		lrp("EvacuateCrashedActualLRP of its own instance", bbsv1.ActualLRPService_EvacuateCrashedActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.EvacuateCrashedActualLRP(ctx, &bbsv1.EvacuateCrashedActualLRPRequest{ActualLrpKey: w.key(w.lrp(), 0), ActualLrpInstanceKey: w.ownKey(), ErrorMessage: "exited"})
			return err
		}),
		lrp("EvacuateCrashedActualLRP of cell-2's instance", bbsv1.ActualLRPService_EvacuateCrashedActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.EvacuateCrashedActualLRP(ctx, &bbsv1.EvacuateCrashedActualLRPRequest{ActualLrpKey: w.key(w.far(), 1), ActualLrpInstanceKey: w.farKey(1), ErrorMessage: "exited"})
			return err
		}),
		lrp("RemoveEvacuatingActualLRP of its own instance", bbsv1.ActualLRPService_RemoveEvacuatingActualLRP_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RemoveEvacuatingActualLRP(ctx, &bbsv1.RemoveEvacuatingActualLRPRequest{ActualLrpKey: w.key(w.lrp(), 0), ActualLrpInstanceKey: w.ownKey()})
			return err
		}),
		lrp("RemoveEvacuatingActualLRP of cell-2's instance", bbsv1.ActualLRPService_RemoveEvacuatingActualLRP_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RemoveEvacuatingActualLRP(ctx, &bbsv1.RemoveEvacuatingActualLRPRequest{ActualLrpKey: w.key(w.far(), 1), ActualLrpInstanceKey: w.farKey(1)})
			return err
		}),
		lrp("RecordExec of its own instance", bbsv1.ActualLRPService_RecordExec_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RecordExec(ctx, &bbsv1.RecordExecRequest{ActualLrpKey: w.key(w.lrp(), 0), ActualLrpInstanceKey: w.ownKey(), User: "drover-client", Args: []string{"sh"}})
			return err
		}),
		lrp("RecordExec of cell-2's instance", bbsv1.ActualLRPService_RecordExec_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RecordExec(ctx, &bbsv1.RecordExecRequest{ActualLrpKey: w.key(w.far(), 1), ActualLrpInstanceKey: w.farKey(1), User: "drover-client", Args: []string{"sh"}})
			return err
		}),

		// TaskService
		lrp("DesireTask", bbsv1.TaskService_DesireTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.DesireTask(ctx, &bbsv1.DesireTaskRequest{TaskGuid: "new-" + w.tag, Domain: testDomain, TaskDefinition: taskDefinition("")})
			return err
		}),
		lrp("DesireTask of a staging task", bbsv1.TaskService_DesireTask_FullMethodName, opsStager, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.DesireTask(ctx, &bbsv1.DesireTaskRequest{TaskGuid: authz.StagingTaskPrefix + "new-" + w.tag, Domain: authz.StagingDomain, TaskDefinition: taskDefinition("")})
			return err
		}),
		lrp("DesireTask of a staging guid outside the staging domain", bbsv1.TaskService_DesireTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.DesireTask(ctx, &bbsv1.DesireTaskRequest{TaskGuid: authz.StagingTaskPrefix + "new-" + w.tag, Domain: testDomain, TaskDefinition: taskDefinition("")})
			return err
		}),
		lrp("GetTask of a staging task", bbsv1.TaskService_GetTask_FullMethodName, opsStager, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.GetTask(ctx, &bbsv1.GetTaskRequest{TaskGuid: authz.StagingTaskPrefix + w.tag})
			return err
		}),
		lrp("CancelTask of a staging task", bbsv1.TaskService_CancelTask_FullMethodName, opsStager, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.CancelTask(ctx, &bbsv1.CancelTaskRequest{TaskGuid: authz.StagingTaskPrefix + w.tag})
			return err
		}),
		lrp("ResolvingTask of a staging task", bbsv1.TaskService_ResolvingTask_FullMethodName, opsStager, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ResolvingTask(ctx, &bbsv1.ResolvingTaskRequest{TaskGuid: authz.StagingTaskPrefix + w.tag})
			return err
		}),
		lrp("DeleteTask of a staging task", bbsv1.TaskService_DeleteTask_FullMethodName, opsStager, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.DeleteTask(ctx, &bbsv1.DeleteTaskRequest{TaskGuid: authz.StagingTaskPrefix + w.tag})
			return err
		}),
		lrp("GetTask of a task on cell-1", bbsv1.TaskService_GetTask_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.GetTask(ctx, &bbsv1.GetTaskRequest{TaskGuid: "own-" + w.tag})
			return err
		}),
		lrp("GetTask of a task on cell-2", bbsv1.TaskService_GetTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.GetTask(ctx, &bbsv1.GetTaskRequest{TaskGuid: "other-" + w.tag})
			return err
		}),
		lrp("ListTasks of cell-1", bbsv1.TaskService_ListTasks_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ListTasks(ctx, &bbsv1.ListTasksRequest{CellId: "cell-1"})
			return err
		}),
		lrp("ListTasks of every cell", bbsv1.TaskService_ListTasks_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ListTasks(ctx, &bbsv1.ListTasksRequest{})
			return err
		}),
		lrp("StartTask of a PENDING task on cell-1", bbsv1.TaskService_StartTask_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.StartTask(ctx, &bbsv1.StartTaskRequest{TaskGuid: "pend-" + w.tag, CellId: "cell-1"})
			return err
		}),
		lrp("StartTask of a task RUNNING on cell-2", bbsv1.TaskService_StartTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.StartTask(ctx, &bbsv1.StartTaskRequest{TaskGuid: "other-" + w.tag, CellId: "cell-1"})
			return err
		}),
		lrp("CancelTask", bbsv1.TaskService_CancelTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.CancelTask(ctx, &bbsv1.CancelTaskRequest{TaskGuid: "own-" + w.tag})
			return err
		}),
		lrp("FailTask of a task on cell-1", bbsv1.TaskService_FailTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.FailTask(ctx, &bbsv1.FailTaskRequest{TaskGuid: "own-" + w.tag, FailureReason: "no"})
			return err
		}),
		lrp("FailTask of a task on cell-2 (cross-cell fail)", bbsv1.TaskService_FailTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.FailTask(ctx, &bbsv1.FailTaskRequest{TaskGuid: "other-" + w.tag, FailureReason: "no"})
			return err
		}),
		lrp("RejectTask of a task on cell-1", bbsv1.TaskService_RejectTask_FullMethodName, []string{"operator", "auctioneer", "cell-1"}, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RejectTask(ctx, &bbsv1.RejectTaskRequest{TaskGuid: "own-" + w.tag, RejectionReason: "no"})
			return err
		}),
		lrp("RejectTask of a task RUNNING on cell-2 (cross-cell reject)", bbsv1.TaskService_RejectTask_FullMethodName, []string{"operator", "auctioneer"}, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RejectTask(ctx, &bbsv1.RejectTaskRequest{TaskGuid: "other-" + w.tag, RejectionReason: "no"})
			return err
		}),
		lrp("RejectTask of a PENDING task", bbsv1.TaskService_RejectTask_FullMethodName, []string{"operator", "auctioneer"}, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RejectTask(ctx, &bbsv1.RejectTaskRequest{TaskGuid: "pend-" + w.tag, RejectionReason: "no"})
			return err
		}),
		lrp("CompleteTask of a task on cell-1", bbsv1.TaskService_CompleteTask_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.CompleteTask(ctx, &bbsv1.CompleteTaskRequest{TaskGuid: "own-" + w.tag, CellId: "cell-1"})
			return err
		}),
		lrp("CompleteTask of a task on cell-2 as cell-2", bbsv1.TaskService_CompleteTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.CompleteTask(ctx, &bbsv1.CompleteTaskRequest{TaskGuid: "other-" + w.tag, CellId: "cell-2"})
			return err
		}),
		lrp("ResolvingTask", bbsv1.TaskService_ResolvingTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ResolvingTask(ctx, &bbsv1.ResolvingTaskRequest{TaskGuid: "own-" + w.tag})
			return err
		}),
		lrp("DeleteTask", bbsv1.TaskService_DeleteTask_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.DeleteTask(ctx, &bbsv1.DeleteTaskRequest{TaskGuid: "own-" + w.tag})
			return err
		}),

		// DomainService, CellService
		lrp("UpsertDomain", bbsv1.DomainService_UpsertDomain_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.UpsertDomain(ctx, &bbsv1.UpsertDomainRequest{Domain: "d-" + w.tag})
			return err
		}),
		lrp("ListDomains", bbsv1.DomainService_ListDomains_FullMethodName, opsEmitter, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ListDomains(ctx, &bbsv1.ListDomainsRequest{})
			return err
		}),
		lrp("HeartbeatCell of cell-1", bbsv1.CellService_HeartbeatCell_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.HeartbeatCell(ctx, heartbeat("cell-1"))
			return err
		}),
		lrp("HeartbeatCell of cell-2", bbsv1.CellService_HeartbeatCell_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.HeartbeatCell(ctx, heartbeat("cell-2"))
			return err
		}),
		lrp("RemoveCell of cell-1", bbsv1.CellService_RemoveCell_FullMethodName, opsCell, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RemoveCell(ctx, &bbsv1.RemoveCellRequest{CellId: "cell-1"})
			return err
		}),
		lrp("RemoveCell of cell-2", bbsv1.CellService_RemoveCell_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RemoveCell(ctx, &bbsv1.RemoveCellRequest{CellId: "cell-2"})
			return err
		}),
		lrp("ListCells", bbsv1.CellService_ListCells_FullMethodName, []string{"operator", "auctioneer", "stager"}, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ListCells(ctx, &bbsv1.ListCellsRequest{})
			return err
		}),
		lrp("CordonCell", bbsv1.CellService_CordonCell_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.CordonCell(ctx, &bbsv1.CordonCellRequest{CellId: "cell-1"})
			return err
		}),
		lrp("UncordonCell", bbsv1.CellService_UncordonCell_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.UncordonCell(ctx, &bbsv1.UncordonCellRequest{CellId: "cell-1"})
			return err
		}),

		// LockService: each component its own lock.
		lrp("AcquireLock auctioneer", bbsv1.LockService_AcquireLock_FullMethodName, []string{"operator", "auctioneer"}, acquire("auctioneer")),
		lrp("AcquireLock converger", bbsv1.LockService_AcquireLock_FullMethodName, opsConv, acquire("converger")),
		lrp("AcquireLock route_emitter", bbsv1.LockService_AcquireLock_FullMethodName, opsEmitter, acquire("route_emitter")),
		lrp("ReleaseLock auctioneer", bbsv1.LockService_ReleaseLock_FullMethodName, []string{"operator", "auctioneer"}, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ReleaseLock(ctx, &bbsv1.ReleaseLockRequest{Key: "auctioneer", Owner: "o-" + w.tag})
			return err
		}),
		lrp("FetchLock", bbsv1.LockService_FetchLock_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.FetchLock(ctx, &bbsv1.FetchLockRequest{Key: "converger"})
			return err
		}),
		lrp("ListLocks", bbsv1.LockService_ListLocks_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ListLocks(ctx, &bbsv1.ListLocksRequest{})
			return err
		}),

		// EventService
		lrp("Subscribe to cell-1's events", bbsv1.EventService_Subscribe_FullMethodName, append(opsEmitter, "cell-1"), func(ctx context.Context, c *client.Client, w world) error {
			after := uint64(0)
			return drain(c.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: &after, CellId: "cell-1"}))
		}),
		lrp("Subscribe to every event", bbsv1.EventService_Subscribe_FullMethodName, opsEmitter, func(ctx context.Context, c *client.Client, w world) error {
			after := uint64(0)
			return drain(c.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: &after}))
		}),

		// ConvergenceService
		lrp("Snapshot", bbsv1.ConvergenceService_Snapshot_FullMethodName, opsConv, func(ctx context.Context, c *client.Client, w world) error {
			return drain(c.Snapshot(ctx, &bbsv1.SnapshotRequest{}))
		}),
		lrp("ApplyLRPActions", bbsv1.ConvergenceService_ApplyLRPActions_FullMethodName, opsConv, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ApplyLRPActions(ctx, &bbsv1.ApplyLRPActionsRequest{})
			return err
		}),
		lrp("ApplyTaskActions", bbsv1.ConvergenceService_ApplyTaskActions_FullMethodName, opsConv, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ApplyTaskActions(ctx, &bbsv1.ApplyTaskActionsRequest{})
			return err
		}),
		lrp("GetConvergerStatus", bbsv1.ConvergenceService_GetConvergerStatus_FullMethodName, opsConv, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.GetConvergerStatus(ctx, &bbsv1.GetConvergerStatusRequest{})
			return err
		}),
		lrp("SetConvergerPaused", bbsv1.ConvergenceService_SetConvergerPaused_FullMethodName, ops, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.SetConvergerPaused(ctx, &bbsv1.SetConvergerPausedRequest{Paused: false})
			return err
		}),
		lrp("ReportConvergencePass", bbsv1.ConvergenceService_ReportConvergencePass_FullMethodName, opsConv, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.ReportConvergencePass(ctx, &bbsv1.ReportConvergencePassRequest{Pass: &bbsv1.ConvergencePass{Owner: "o-" + w.tag}})
			return err
		}),
		lrp("RequestAuctions", bbsv1.ConvergenceService_RequestAuctions_FullMethodName, opsConv, func(ctx context.Context, c *client.Client, w world) error {
			_, err := c.RequestAuctions(ctx, &bbsv1.RequestAuctionsRequest{})
			return err
		}),

		// What every gRPC server registers.
		lrp("Health Check", healthpb.Health_Check_FullMethodName, everyone, func(ctx context.Context, c *client.Client, w world) error {
			_, err := healthpb.NewHealthClient(c.Conn).Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		}),
		lrp("Health List", healthpb.Health_List_FullMethodName, everyone, func(ctx context.Context, c *client.Client, w world) error {
			_, err := healthpb.NewHealthClient(c.Conn).List(ctx, &healthpb.HealthListRequest{})
			return err
		}),
		lrp("Health Watch", healthpb.Health_Watch_FullMethodName, everyone, func(ctx context.Context, c *client.Client, w world) error {
			return drain(healthpb.NewHealthClient(c.Conn).Watch(ctx, &healthpb.HealthCheckRequest{}))
		}),
		lrp("Reflection", reflectionpb.ServerReflection_ServerReflectionInfo_FullMethodName, everyone, reflect),
		lrp("Reflection v1alpha", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", everyone, func(ctx context.Context, c *client.Client, w world) error {
			stream, err := c.Conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
			if err != nil {
				return err
			}
			// io.EOF: the server ended the stream (a refusal); RecvMsg returns its status.
			if err := stream.SendMsg(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return stream.RecvMsg(&reflectionpb.ServerReflectionResponse{})
		}),
	}
}

func acquire(key string) func(ctx context.Context, c *client.Client, w world) error {
	return func(ctx context.Context, c *client.Client, w world) error {
		_, err := c.AcquireLock(ctx, &bbsv1.AcquireLockRequest{Key: key, Owner: "o-" + w.tag, TtlSeconds: 1})
		return err
	}
}

func reflect(ctx context.Context, c *client.Client, _ world) error {
	stream, err := reflectionpb.NewServerReflectionClient(c.Conn).ServerReflectionInfo(ctx)
	if err != nil {
		return err
	}
	// io.EOF: the server ended the stream (a refusal); Recv returns its status.
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_, err = stream.Recv()
	return err
}

func heartbeat(cell string) *bbsv1.HeartbeatCellRequest {
	return &bbsv1.HeartbeatCellRequest{TtlSeconds: 60, CellPresence: &modelsv1.CellPresence{
		CellId: cell, RepAddress: "127.0.0.1:1", Zone: "z1",
		Capacity: &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Containers: 10}}}
}

// serveGuarded serves the harness's BBS over mTLS on loopback behind the BBS's guard
// (as cmd/bbs does) and returns a client factory by certificate common name.
func serveGuarded(t *testing.T, h *harness) func(commonName string) *client.Client {
	t.Helper()
	ca := authztest.NewCA(t)
	guard, err := server.NewGuard(authz.DefaultNames(), testLogger(), nil)
	require.NoError(t, err)
	srv, _ := grpcserver.NewServer(ca.Server("bbs"),
		grpc.ChainUnaryInterceptor(guard.UnaryInterceptor(), server.UnaryInterceptor(testLogger())),
		grpc.ChainStreamInterceptor(guard.StreamInterceptor(), server.StreamInterceptor(testLogger())))
	h.server.Register(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	clients := map[string]*client.Client{}
	return func(cn string) *client.Client {
		if c, ok := clients[cn]; ok {
			return c
		}
		c, err := client.New(lis.Addr().String(), ca.Client(cn))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		clients[cn] = c
		return c
	}
}

// TestBBSAuthorisationTable is issue 12's acceptance 2 for the BBS: every RPC, as
// every identity, over real mTLS against a real store, is either allowed or
// PermissionDenied as the table says, including cell-1 acting on cell-2's rows. Each
// call acts on a world of its own.
func TestBBSAuthorisationTable(t *testing.T) {
	h := newHarness(t)
	as := serveGuarded(t, h)
	cases := bbsCases()

	t.Run("every method has a row", func(t *testing.T) {
		covered := map[string]bool{}
		for _, c := range cases {
			covered[c.method] = true
		}
		srv, _ := grpcserver.NewServer(nil)
		h.server.Register(srv)
		for _, m := range append(authz.ServerMethods(srv), authz.PackageMethods("drover.bbs.v1")...) {
			require.True(t, covered[m], "no row for %s", m)
		}
	})

	n := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, caller := range callers {
				n++
				w := h.world(fmt.Sprintf("w%d", n))
				ctx, cancel := context.WithTimeout(context.Background(), waitFor)
				err := tc.call(ctx, as(caller.commonName), w)
				cancel()
				if slices.Contains(tc.allowed, caller.name) {
					require.NotEqual(t, codes.PermissionDenied, status.Code(err), "%s should be allowed: %v", caller.name, err)
					continue
				}
				require.Equal(t, codes.PermissionDenied, status.Code(err), "%s should be refused, got %v", caller.name, err)
			}
		})
	}
}

// TestCrossCellCallsChangeNothing checks the regressions of issue 12 in detail: cell-1
// cannot start an instance cell-2 claimed (today's code let it take it over), nor
// reject or fail a task RUNNING on cell-2, and the rows stay as they were.
func TestCrossCellCallsChangeNothing(t *testing.T) {
	h := newHarness(t)
	cell1 := serveGuarded(t, h)("cell:cell-1")
	w := h.world("x")

	_, err := cell1.StartActualLRP(h.ctx(), &bbsv1.StartActualLRPRequest{ActualLrpKey: w.key(w.far(), 0),
		ActualLrpInstanceKey: instanceKey(w.far(), 0, "cell-1"), ActualLrpNetInfo: testNetInfo})
	requireCode(t, err, codes.PermissionDenied)
	require.ErrorContains(t, err, `cell "cell-1" may not change actual lrp far-x/0: it is CLAIMED on cell "cell-2"`)
	row := h.actual(w.far(), 0)
	require.Equal(t, "cell-2", row.GetCellId())
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED, row.GetState())

	_, err = cell1.RejectTask(h.ctx(), &bbsv1.RejectTaskRequest{TaskGuid: "other-x", RejectionReason: "mine now"})
	requireCode(t, err, codes.PermissionDenied)
	_, err = cell1.FailTask(h.ctx(), &bbsv1.FailTaskRequest{TaskGuid: "other-x", FailureReason: "mine now"})
	requireCode(t, err, codes.PermissionDenied)
	task, err := h.task("other-x")
	require.NoError(t, err)
	require.Equal(t, modelsv1.TaskState_TASK_STATE_RUNNING, task.GetState())
	require.Equal(t, "cell-2", task.GetCellId())
	require.Zero(t, task.GetRejectionCount())
}

// TestCellReadsOnlyItsOwn: a cell's lists and event stream show only its own cell; it
// sees no DesiredLRP events (they carry every app's run info) nor other cells' tasks.
func TestCellReadsOnlyItsOwn(t *testing.T) {
	h := newHarness(t)
	cell1 := serveGuarded(t, h)("cell:cell-1")
	w := h.world("r")

	rows := 0
	stream, err := cell1.ListActualLRPs(h.ctx(), &bbsv1.ListActualLRPsRequest{CellId: "cell-1"})
	require.NoError(t, err)
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		for _, a := range resp.GetActualLrps() {
			require.Equal(t, "cell-1", a.GetCellId())
			rows++
		}
	}
	require.Equal(t, 1, rows)

	after := uint64(0)
	events, err := cell1.Subscribe(h.ctx(), &bbsv1.SubscribeRequest{AfterSequence: &after, CellId: "cell-1"})
	require.NoError(t, err)
	// A task placed on cell-1 last, so the stream has something to end on.
	h.desireTask("last-r", "")
	_, err = h.client.StartTask(h.ctx(), &bbsv1.StartTaskRequest{TaskGuid: "last-r", CellId: "cell-1"})
	require.NoError(t, err)
	var seen []string
	for {
		resp, err := events.Recv()
		require.NoError(t, err)
		e := resp.GetEvent()
		switch p := e.GetPayload().(type) {
		case *modelsv1.Event_DesiredLrpCreated, *modelsv1.Event_DesiredLrpChanged, *modelsv1.Event_DesiredLrpRemoved:
			t.Fatalf("a cell received a desired lrp event: %v", e)
		case *modelsv1.Event_TaskChanged:
			require.Contains(t, []string{p.TaskChanged.GetBefore().GetCellId(), p.TaskChanged.GetAfter().GetCellId()}, "cell-1")
			seen = append(seen, p.TaskChanged.GetAfter().GetTaskGuid())
		case *modelsv1.Event_TaskCreated:
			t.Fatalf("a cell received a PENDING task's event: %v", e)
		default:
			seen = append(seen, e.String())
		}
		if len(seen) > 0 && seen[len(seen)-1] == "last-r" {
			break
		}
	}
	require.Contains(t, seen, "own-"+w.tag)
	for _, s := range seen {
		require.NotContains(t, s, "far-r", "no event of cell-2's instances")
	}
}

// TestOperatorsOnlyHTTP: the HTTP API admits operators only; a request without TLS
// (a handler served directly in tests) passes.
func TestOperatorsOnlyHTTP(t *testing.T) {
	ca := authztest.NewCA(t)
	check := server.OperatorsOnlyHTTP(authz.DefaultNames())
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := check(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
		}
	}))
	srv.TLS = ca.Server("bbs")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		cn, want string
	}{
		{"drover-client", ""},
		{"cell:cell-1", `cell "cell-1" may not use the HTTP API`},
		{"route-emitter", `route-emitter "route-emitter" may not use the HTTP API`},
		{"cell:", `certificate "cell:" names no cell`},
		{"stranger", `certificate "stranger" has no role`},
	} {
		t.Run(tc.cn, func(t *testing.T) {
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.Client(tc.cn)}}
			resp, err := c.Get(srv.URL)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.want == "" {
				require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
				return
			}
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
			require.True(t, strings.Contains(string(body), tc.want), "body %q", body)
		})
	}
	require.NoError(t, check(httptest.NewRequest(http.MethodGet, "/", nil)))
}
