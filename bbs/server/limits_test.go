package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// serialTree is depth serial actions deep, a run at the bottom.
func serialTree(depth int) *modelsv1.Action {
	a := runAction()
	for range depth - 1 {
		a = &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{Actions: []*modelsv1.Action{a}}}}
	}
	return a
}

// nestedJSON is a route value that nests depth arrays.
func nestedJSON(t *testing.T, depth int) *structpb.Value {
	var v any = "leaf"
	for range depth {
		v = []any{v}
	}
	value, err := structpb.NewValue(v)
	require.NoError(t, err)
	return value
}

// lrpWith is a valid DesiredLRP "limits" changed by mutate.
func lrpWith(mutate func(*modelsv1.DesiredLRP)) *modelsv1.DesiredLRP {
	lrp := desiredLRP("limits", 1)
	mutate(lrp)
	return lrp
}

// taskWith is a valid task request changed by mutate.
func taskWith(mutate func(*bbsv1.DesireTaskRequest)) *bbsv1.DesireTaskRequest {
	req := &bbsv1.DesireTaskRequest{TaskGuid: "limits-task", Domain: testDomain, TaskDefinition: taskDefinition("")}
	mutate(req)
	return req
}

// TestInputLimitsOverGRPC sends a request over each limit of models/limits.go through the
// gRPC API: each is InvalidArgument naming the field and the limit, and nothing changes.
func TestInputLimitsOverGRPC(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	h.desire("existing", 1)
	h.desireTask("existing-task", "")
	h.claim("existing", 0, "cell-1")
	ctx := h.ctx()
	sequence, err := h.db.LatestSequence(ctx)
	require.NoError(t, err)

	long := strings.Repeat("a", models.MaxIdentifierLength+1)
	desire := func(mutate func(*modelsv1.DesiredLRP)) func() error {
		return func() error {
			_, err := h.client.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrpWith(mutate)})
			return err
		}
	}
	desireTask := func(mutate func(*bbsv1.DesireTaskRequest)) func() error {
		return func() error { _, err := h.client.DesireTask(ctx, taskWith(mutate)); return err }
	}
	update := func(guid string, u *modelsv1.DesiredLRPUpdate) func() error {
		return func() error {
			_, err := h.client.UpdateDesiredLRP(ctx, &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: u})
			return err
		}
	}
	tooDeep := "action" + strings.Repeat(".serial.actions[0]", models.MaxActionDepth)
	cases := []struct {
		name string
		call func() error
		want []string // each names a field and its limit
	}{
		{"action tree depth", desire(func(l *modelsv1.DesiredLRP) { l.Action = serialTree(models.MaxActionDepth + 1) }),
			[]string{"invalid field " + tooDeep + ": action trees must be at most 16 actions deep"}},
		{"the issue's 4998-deep serial tree", desire(func(l *modelsv1.DesiredLRP) { l.Action = serialTree(4998) }),
			[]string{"invalid field " + tooDeep + ": action trees must be at most 16 actions deep"}},
		{"action list width", desire(func(l *modelsv1.DesiredLRP) {
			l.Setup = &modelsv1.Action{Action: &modelsv1.Action_Parallel{Parallel: &modelsv1.ParallelAction{
				Actions: make([]*modelsv1.Action, models.MaxActionChildren+1),
			}}}
		}), []string{"invalid field setup.parallel.actions: must have at most 100 actions"}},
		{"timeout", desire(func(l *modelsv1.DesiredLRP) {
			l.Monitor = &modelsv1.Action{Action: &modelsv1.Action_Timeout{Timeout: &modelsv1.TimeoutAction{Action: runAction(), TimeoutMs: 1 << 62}}}
		}), []string{"invalid field monitor.timeout.timeout_ms: must be at most 2592000000"}},
		{"number of ports", desire(func(l *modelsv1.DesiredLRP) { l.Ports = []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11} }),
			[]string{"invalid field ports: must have at most 10 ports"}},
		{"duplicate ports", desire(func(l *modelsv1.DesiredLRP) { l.Ports = []uint32{8080, 8080} }),
			[]string{"invalid field ports[1]: must not repeat port 8080"}},
		{"instances", desire(func(l *modelsv1.DesiredLRP) { l.Instances = models.MaxInstances + 1 }),
			[]string{"invalid field instances: must be at most 10000"}},
		{"instances of an update", update("existing", &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(models.MaxInstances + 1)}),
			[]string{"invalid field instances: must be at most 10000"}},
		{"a 900 KB guid", desire(func(l *modelsv1.DesiredLRP) { l.ProcessGuid = strings.Repeat("g", 900*1024) }),
			[]string{"invalid field process_guid: must be at most 255 bytes"}},
		{"identifier lengths", desire(func(l *modelsv1.DesiredLRP) {
			l.Domain, l.LogGuid, l.LogSource, l.MetricsGuid, l.PlacementTags = long, long, long, long, []string{long}
		}), []string{
			"invalid field domain: must be at most 255 bytes", "invalid field log_guid: must be at most 255 bytes",
			"invalid field log_source: must be at most 255 bytes", "invalid field metrics_guid: must be at most 255 bytes",
			"invalid field placement_tags[0]: must be at most 255 bytes",
		}},
		{"control characters in identifiers", desire(func(l *modelsv1.DesiredLRP) { l.Domain, l.LogGuid = "cf\x00apps", "log\x1b]0;owned\x07" }),
			[]string{"invalid field domain: must not contain control characters", "invalid field log_guid: must not contain control characters"}},
		{"other strings", desire(func(l *modelsv1.DesiredLRP) {
			l.Action.GetRun().Args = []string{strings.Repeat("a", models.MaxStringLength+1)}
			l.Annotation = "\x00"
		}), []string{"invalid field action.run.args[0]: must be at most 131072 bytes", "invalid field annotation: must not contain NUL characters"}},
		{"annotation", desire(func(l *modelsv1.DesiredLRP) { l.Annotation = strings.Repeat("a", models.MaxAnnotationLength+1) }),
			[]string{"invalid field annotation: must be at most 10240 bytes"}},
		{"environment", desire(func(l *modelsv1.DesiredLRP) {
			l.Env = make([]*modelsv1.EnvironmentVariable, models.MaxEnvironmentVariables+1)
			l.Action.GetRun().Env = []*modelsv1.EnvironmentVariable{{Name: "A=B"}}
		}), []string{"invalid field env: must have at most 256 variables", `invalid field action.run.env[0].name: must not contain "="`}},
		{"egress rules", desire(func(l *modelsv1.DesiredLRP) { l.EgressRules = make([]*modelsv1.EgressRule, models.MaxEgressRules+1) }),
			[]string{"invalid field egress_rules: must have at most 1000 rules"}},
		{"placement tags", desire(func(l *modelsv1.DesiredLRP) { l.PlacementTags = make([]string, models.MaxPlacementTags+1) }),
			[]string{"invalid field placement_tags: must have at most 32 entries"}},
		{"metric tags", desire(func(l *modelsv1.DesiredLRP) {
			l.MetricTags = map[string]*modelsv1.MetricTagValue{}
			for i := range models.MaxMetricTags + 1 {
				l.MetricTags[fmt.Sprint("t", i)] = &modelsv1.MetricTagValue{Static: "v"}
			}
		}), []string{"invalid field metric_tags: must have at most 64 tags"}},
		{"routes depth", desire(func(l *modelsv1.DesiredLRP) {
			l.Routes = map[string]*structpb.Value{"deep": nestedJSON(t, models.MaxRoutesDepth+1)}
		}), []string{"invalid field routes[deep]: must nest at most 16 levels of arrays and objects"}},
		{"routes size", update("existing", &modelsv1.DesiredLRPUpdate{Routes: map[string]*structpb.Value{
			"cf-router": structpb.NewStringValue(strings.Repeat("r", models.MaxRoutesLength)),
		}}), []string{"invalid field routes: must be at most 131072 bytes of JSON in total"}},
		{"NUL in routes", update("existing", &modelsv1.DesiredLRPUpdate{Routes: map[string]*structpb.Value{
			"cf-router": structpb.NewStringValue("a\x00"),
		}}), []string{"invalid field routes[cf-router]: must not contain NUL characters"}},
		{"task guid and domain", desireTask(func(r *bbsv1.DesireTaskRequest) { r.TaskGuid, r.Domain = long, "d\x00" }),
			[]string{"invalid field task_guid: must be at most 255 bytes", "invalid field domain: must not contain control characters"}},
		{"task definition", desireTask(func(r *bbsv1.DesireTaskRequest) {
			r.TaskDefinition.Action = serialTree(models.MaxActionDepth + 1)
			r.TaskDefinition.PlacementTags = []string{"\x1b[31m"}
		}), []string{"invalid field task_definition.action.serial", "at most 16 actions deep", "invalid field task_definition.placement_tags[0]: must not contain control characters"}},
		{"domain", func() error {
			_, err := h.client.UpsertDomain(ctx, &bbsv1.UpsertDomainRequest{Domain: "cf\x00apps"})
			return err
		}, []string{"invalid field domain: must not contain control characters"}},
		{"cell id of a heartbeat", func() error {
			_, err := h.client.HeartbeatCell(ctx, &bbsv1.HeartbeatCellRequest{TtlSeconds: 60, CellPresence: &modelsv1.CellPresence{
				CellId: long, RepAddress: h.rep.address, Capacity: &modelsv1.CellCapacity{MemoryMb: 1, Containers: 1},
			}})
			return err
		}, []string{"invalid field cell_presence.cell_id: must be at most 255 bytes"}},
		{"cordon reason", func() error {
			_, err := h.client.CordonCell(ctx, &bbsv1.CordonCellRequest{CellId: "cell-1", Reason: strings.Repeat("r", models.MaxReasonLength+1)})
			return err
		}, []string{"invalid field reason: must be at most 1024 bytes"}},
		{"instance guid of a claim", func() error {
			_, err := h.client.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{ProcessGuid: "existing", Index: 0,
				ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{InstanceGuid: long, CellId: "cell-1"}})
			return err
		}, []string{"invalid field actual_lrp_instance_key.instance_guid: must be at most 255 bytes"}},
		{"task result", func() error {
			_, err := h.client.CompleteTask(ctx, &bbsv1.CompleteTaskRequest{TaskGuid: "existing-task", CellId: "cell-1", Result: strings.Repeat("r", models.MaxTaskResultLength+1)})
			return err
		}, []string{"invalid field result: must be at most 10240 bytes"}},
		{"lock key", func() error {
			_, err := h.client.AcquireLock(ctx, &bbsv1.AcquireLockRequest{Key: long, Owner: "me", TtlSeconds: 10})
			return err
		}, []string{"invalid field key: must be at most 255 bytes"}},
		{"a read's guid", func() error {
			_, err := h.client.GetDesiredLRP(ctx, &bbsv1.GetDesiredLRPRequest{ProcessGuid: strings.Repeat("g", 900*1024)})
			return err
		}, []string{"invalid field process_guid: must be at most 255 bytes"}},
		{"a list's filter", func() error {
			_, err := h.client.ListTasks(ctx, &bbsv1.ListTasksRequest{CellId: "cell\x00"})
			return err
		}, []string{"invalid field cell_id: must not contain control characters"}},
		{"a stream's filter", func() error {
			stream, err := h.client.ListActualLRPs(ctx, &bbsv1.ListActualLRPsRequest{Domain: long})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}, []string{"invalid field domain: must be at most 255 bytes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			requireCode(t, err, codes.InvalidArgument)
			msg := status.Convert(err).Message()
			for _, want := range tc.want {
				require.Contains(t, msg, want)
			}
			require.Less(t, len(msg), 8*1024, "the message stays short")
		})
	}

	t.Run("nothing changed", func(t *testing.T) {
		after, err := h.db.LatestSequence(ctx)
		require.NoError(t, err)
		require.Equal(t, sequence, after, "no event")
		lrps, err := h.db.ListDesiredLRPs(ctx, store.DesiredLRPFilter{})
		require.NoError(t, err)
		require.Len(t, lrps, 1)
		require.Equal(t, "existing", lrps[0].GetProcessGuid())
		require.EqualValues(t, 1, lrps[0].GetInstances())
		require.Empty(t, lrps[0].GetRoutes())
		tasks, err := h.db.ListTasks(ctx, store.TaskFilter{})
		require.NoError(t, err)
		require.Len(t, tasks, 1)
		require.Equal(t, modelsv1.TaskState_TASK_STATE_PENDING, tasks[0].GetState())
		domains, err := h.db.ListFreshDomains(ctx)
		require.NoError(t, err)
		require.Empty(t, domains)
		cells, err := h.db.ListLiveCells(ctx)
		require.NoError(t, err)
		require.Len(t, cells, 1)
		require.False(t, cells[0].GetCordoned())
		locks, err := h.db.ListLocks(ctx)
		require.NoError(t, err)
		require.Empty(t, locks)
		require.Equal(t, "existing-0-instance", h.actual("existing", 0).GetInstanceGuid())
	})
}

// TestDeepestValidTreeCrossesTheEventStream desires an LRP and a task at the action
// depth and routes depth limits and reads their events back from Subscribe.
func TestDeepestValidTreeCrossesTheEventStream(t *testing.T) {
	h := newHarness(t)
	ctx := h.ctx()
	var after uint64
	stream, err := h.client.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: &after})
	require.NoError(t, err)

	lrp := lrpWith(func(l *modelsv1.DesiredLRP) {
		l.ProcessGuid = "deepest"
		l.Action = serialTree(models.MaxActionDepth)
		l.Routes = map[string]*structpb.Value{"deep": nestedJSON(t, models.MaxRoutesDepth)}
	})
	_, err = h.client.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrp})
	require.NoError(t, err)
	task := taskWith(func(r *bbsv1.DesireTaskRequest) { r.TaskDefinition.Action = serialTree(models.MaxActionDepth) })
	_, err = h.client.DesireTask(ctx, task)
	require.NoError(t, err)

	var gotLRP, gotTask bool
	for !gotLRP || !gotTask {
		resp, err := stream.Recv()
		require.NoError(t, err)
		if created := resp.GetEvent().GetDesiredLrpCreated(); created != nil {
			require.True(t, proto.Equal(lrp.GetAction(), created.GetDesiredLrp().GetAction()))
			require.True(t, proto.Equal(lrp.GetRoutes()["deep"], created.GetDesiredLrp().GetRoutes()["deep"]))
			gotLRP = true
		}
		if created := resp.GetEvent().GetTaskCreated(); created != nil {
			require.True(t, proto.Equal(task.GetTaskDefinition().GetAction(), created.GetTask().GetTaskDefinition().GetAction()))
			gotTask = true
		}
	}
}
