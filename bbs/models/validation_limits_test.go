package models_test

import (
	"fmt"
	"strings"
	"testing"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// nestedActions is a tree depth actions deep: wrappers of every kind around a run.
func nestedActions(depth int) *modelsv1.Action {
	a := runAction("/bin/true")
	for level := 2; level <= depth; level++ {
		switch level % 4 {
		case 0:
			a = serial(a)
		case 1:
			a = &modelsv1.Action{Action: &modelsv1.Action_Timeout{Timeout: &modelsv1.TimeoutAction{Action: a, TimeoutMs: 1000}}}
		case 2:
			a = &modelsv1.Action{Action: &modelsv1.Action_Try{Try: &modelsv1.TryAction{Action: a}}}
		default:
			a = &modelsv1.Action{Action: &modelsv1.Action_Parallel{Parallel: &modelsv1.ParallelAction{Actions: []*modelsv1.Action{a}}}}
		}
	}
	return a
}

// serialChain is depth serial actions around a run, as the reproduction sent.
func serialChain(depth int) *modelsv1.Action {
	a := runAction("/bin/true")
	for range depth - 1 {
		a = serial(a)
	}
	return a
}

// serialChainPath is the path validation gives the action depth levels down a serialChain.
func serialChainPath(depth int) string {
	return "action" + strings.Repeat(".serial.actions[0]", depth-1)
}

// nestedRoute is a JSON value that nests depth arrays.
func nestedRoute(t testing.TB, depth int) *structpb.Value {
	var v any = "leaf"
	for range depth {
		v = []any{v}
	}
	value, err := structpb.NewValue(v)
	require.NoError(t, err)
	return value
}

func repeated[T any](n int, build func(i int) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = build(i)
	}
	return out
}

func envVars(n int) []*modelsv1.EnvironmentVariable {
	return repeated(n, func(i int) *modelsv1.EnvironmentVariable {
		return &modelsv1.EnvironmentVariable{Name: fmt.Sprintf("VAR_%d", i), Value: "v"}
	})
}

func tags(n int) []string {
	return repeated(n, func(i int) string { return fmt.Sprintf("tag-%d", i) })
}

func metricTags(n int) map[string]*modelsv1.MetricTagValue {
	m := map[string]*modelsv1.MetricTagValue{}
	for i := range n {
		m[fmt.Sprintf("tag_%d", i)] = &modelsv1.MetricTagValue{Static: "v"}
	}
	return m
}

func egressRules(n int) []*modelsv1.EgressRule {
	return repeated(n, func(int) *modelsv1.EgressRule {
		return &modelsv1.EgressRule{Protocol: "all", Destinations: []string{"10.0.0.1"}}
	})
}

func ports(n int) []uint32 {
	return repeated(n, func(i int) uint32 { return uint32(8080 + i) })
}

func TestDesiredLRPLimits(t *testing.T) {
	long := strings.Repeat("a", models.MaxIdentifierLength+1)
	cases := []struct {
		name   string
		mutate func(*modelsv1.DesiredLRP)
		want   []string // empty: accepted
	}{
		{"deepest action tree", action(nestedActions(models.MaxActionDepth)), nil},
		{"action tree one too deep", action(serialChain(models.MaxActionDepth + 1)),
			[]string{"invalid field " + serialChainPath(models.MaxActionDepth+1) + ": action trees must be at most 16 actions deep"}},
		{"the 4998-deep tree of the issue", action(serialChain(4998)),
			[]string{"invalid field " + serialChainPath(models.MaxActionDepth+1) + ": action trees must be at most 16 actions deep"}},
		{"setup and monitor are bounded too", func(l *modelsv1.DesiredLRP) {
			l.Setup, l.Monitor = nestedActions(models.MaxActionDepth+1), nestedActions(models.MaxActionDepth+1)
		}, []string{"invalid field setup.", "invalid field monitor.", "at most 16 actions deep"}},
		{"sidecars are bounded too", func(l *modelsv1.DesiredLRP) { l.Sidecars[0].Action = serialChain(models.MaxActionDepth + 1) },
			[]string{"invalid field sidecars[0].action.serial", "at most 16 actions deep"}},
		{"widest action list", action(serial(repeated(models.MaxActionChildren, func(int) *modelsv1.Action { return runAction("/bin/true") })...)), nil},
		{"action list one too wide", action(serial(repeated(models.MaxActionChildren+1, func(int) *modelsv1.Action { return runAction("/bin/true") })...)),
			[]string{"invalid field action.serial.actions: must have at most 100 actions"}},
		{"longest timeout", action(&modelsv1.Action{Action: &modelsv1.Action_Timeout{Timeout: &modelsv1.TimeoutAction{Action: runAction("/x"), TimeoutMs: models.MaxDurationMs}}}), nil},
		{"timeout over 30 days", action(&modelsv1.Action{Action: &modelsv1.Action_Timeout{Timeout: &modelsv1.TimeoutAction{Action: runAction("/x"), TimeoutMs: models.MaxDurationMs + 1}}}),
			[]string{"invalid field action.timeout.timeout_ms: must be at most 2592000000 (30 days)"}},
		{"check durations", func(l *modelsv1.DesiredLRP) {
			l.CheckDefinition.Checks[0].HttpCheck.IntervalMs = 1 << 60
			l.CheckDefinition.ReadinessChecks[0].TcpCheck.ConnectTimeoutMs = models.MaxDurationMs + 1
		}, []string{
			"invalid field check_definition.checks[0].http_check.interval_ms: must be at most 2592000000",
			"invalid field check_definition.readiness_checks[0].tcp_check.connect_timeout_ms: must be at most 2592000000",
		}},
		{"most ports", func(l *modelsv1.DesiredLRP) { l.Ports = ports(models.MaxPorts) }, nil},
		{"too many ports", func(l *modelsv1.DesiredLRP) { l.Ports = ports(models.MaxPorts + 1) },
			[]string{"invalid field ports: must have at most 10 ports"}},
		{"duplicate ports", func(l *modelsv1.DesiredLRP) { l.Ports = []uint32{8080, 2222, 8080} },
			[]string{"invalid field ports[2]: must not repeat port 8080 (ports[0])"}},
		{"most instances", func(l *modelsv1.DesiredLRP) { l.Instances = models.MaxInstances }, nil},
		{"too many instances", func(l *modelsv1.DesiredLRP) { l.Instances = models.MaxInstances + 1 },
			[]string{"invalid field instances: must be at most 10000"}},
		{"longest identifiers", func(l *modelsv1.DesiredLRP) {
			max := strings.Repeat("a", models.MaxIdentifierLength)
			l.ProcessGuid, l.Domain, l.LogGuid, l.LogSource, l.MetricsGuid = max, max, max, max, max
			l.MetricTags["source_id"].Static = max
		}, nil},
		{"identifiers too long", func(l *modelsv1.DesiredLRP) {
			l.ProcessGuid, l.Domain, l.LogGuid, l.LogSource, l.MetricsGuid = long, long, long, long, ""
			l.PlacementTags = []string{long}
			l.Action.GetRun().User = long
		}, []string{
			"invalid field process_guid: must be at most 255 bytes", "invalid field domain: must be at most 255 bytes",
			"invalid field log_guid: must be at most 255 bytes", "invalid field log_source: must be at most 255 bytes",
			"invalid field placement_tags[0]: must be at most 255 bytes", "invalid field action.run.user: must be at most 255 bytes",
		}},
		{"a 900 KB guid", func(l *modelsv1.DesiredLRP) { l.ProcessGuid = strings.Repeat("g", 900*1024) },
			[]string{"invalid field process_guid: must be at most 255 bytes"}},
		{"control characters in identifiers", func(l *modelsv1.DesiredLRP) {
			l.Domain, l.LogGuid, l.LogSource = "cf\x00apps", "log\x1b[2J", "APP\n"
			l.MetricTags["source_id"].Static = "\u0085"
			l.PlacementTags = []string{"zone\ta"}
		}, []string{
			"invalid field domain: must not contain control characters (U+0000 at byte 2)",
			"invalid field log_guid: must not contain control characters (U+001B at byte 3)",
			"invalid field log_source: must not contain control characters (U+000A at byte 3)",
			"invalid field metric_tags[source_id].static: must not contain control characters (U+0085 at byte 0)",
			"invalid field placement_tags[0]: must not contain control characters (U+0009 at byte 4)",
		}},
		{"NUL in a process guid", func(l *modelsv1.DesiredLRP) { l.ProcessGuid = "guid\x00" },
			[]string{"invalid field process_guid: must match"}},
		{"most environment variables", func(l *modelsv1.DesiredLRP) { l.Env = envVars(models.MaxEnvironmentVariables) }, nil},
		{"too many environment variables", func(l *modelsv1.DesiredLRP) {
			l.Env = envVars(models.MaxEnvironmentVariables + 1)
			l.Action.GetRun().Env = envVars(models.MaxEnvironmentVariables + 1)
		}, []string{"invalid field env: must have at most 256 variables", "invalid field action.run.env: must have at most 256 variables"}},
		{"environment variable names", func(l *modelsv1.DesiredLRP) {
			l.Env = []*modelsv1.EnvironmentVariable{{Name: "A=B"}, {Name: long}, {Name: "X\x00"}}
		}, []string{
			`invalid field env[0].name: must not contain "="`, "invalid field env[1].name: must be at most 255 bytes",
			"invalid field env[2].name: must not contain control characters",
		}},
		{"longest environment value", func(l *modelsv1.DesiredLRP) { l.Env[0].Value = strings.Repeat("v", models.MaxStringLength) }, nil},
		{"environment value too long", func(l *modelsv1.DesiredLRP) { l.Env[0].Value = strings.Repeat("v", models.MaxStringLength+1) },
			[]string{"invalid field env[0].value: must be at most 131072 bytes"}},
		{"any string is bounded", func(l *modelsv1.DesiredLRP) {
			l.Action.GetRun().Args = []string{strings.Repeat("a", models.MaxStringLength+1)}
			l.Network.Properties["policy_group_id"] = strings.Repeat("p", models.MaxStringLength+1)
		}, []string{
			"invalid field action.run.args[0]: must be at most 131072 bytes",
			"invalid field network.properties[policy_group_id]: must be at most 131072 bytes",
		}},
		{"no NUL in any string", func(l *modelsv1.DesiredLRP) {
			l.Annotation = "a\x00"
			l.Action.GetRun().Args = []string{"-c", "echo \x00"}
			l.ImagePassword = "p\x00"
		}, []string{
			"invalid field annotation: must not contain NUL characters",
			"invalid field action.run.args[1]: must not contain NUL characters",
			"invalid field image_password: must not contain NUL characters",
		}},
		{"NUL in file contents is fine", func(l *modelsv1.DesiredLRP) { l.VolumeMountedFiles[0].Content = "bin\x00ary" }, nil},
		{"other control characters in text are fine", func(l *modelsv1.DesiredLRP) {
			l.Annotation = "line 1\nline 2\t\x1b[0m"
			l.Action.GetRun().Args = []string{"-c", "echo 1\necho 2"}
		}, nil},
		{"map keys are identifiers", func(l *modelsv1.DesiredLRP) {
			l.MetricTags[long] = &modelsv1.MetricTagValue{Static: "v"}
			l.Network.Properties["bad\x1bkey"] = "v"
			l.Routes[long] = structpb.NewStringValue("r")
		}, []string{
			`invalid field metric_tags["` + strings.Repeat("a", 64) + `..."]: key must be at most 255 bytes`,
			`invalid field network.properties["bad\x1bkey"]: key must not contain control characters`,
			`invalid field routes["` + strings.Repeat("a", 64) + `..."]: key must be at most 255 bytes`,
		}},
		{"most egress rules", func(l *modelsv1.DesiredLRP) { l.EgressRules = egressRules(models.MaxEgressRules) }, nil},
		{"too many egress rules", func(l *modelsv1.DesiredLRP) { l.EgressRules = egressRules(models.MaxEgressRules + 1) },
			[]string{"invalid field egress_rules: must have at most 1000 rules"}},
		{"most placement tags", func(l *modelsv1.DesiredLRP) { l.PlacementTags = tags(models.MaxPlacementTags) }, nil},
		{"too many placement tags", func(l *modelsv1.DesiredLRP) { l.PlacementTags = tags(models.MaxPlacementTags + 1) },
			[]string{"invalid field placement_tags: must have at most 32 entries"}},
		{"most metric tags", func(l *modelsv1.DesiredLRP) { l.MetricTags, l.MetricsGuid = metricTags(models.MaxMetricTags), "" }, nil},
		{"too many metric tags", func(l *modelsv1.DesiredLRP) { l.MetricTags, l.MetricsGuid = metricTags(models.MaxMetricTags+1), "" },
			[]string{"invalid field metric_tags: must have at most 64 tags"}},
		{"deepest routes", func(l *modelsv1.DesiredLRP) { l.Routes["deep"] = nestedRoute(t, models.MaxRoutesDepth) }, nil},
		{"routes too deep", func(l *modelsv1.DesiredLRP) { l.Routes["deep"] = nestedRoute(t, models.MaxRoutesDepth+1) },
			[]string{"invalid field routes[deep]: must nest at most 16 levels of arrays and objects"}},
		{"a 4998-deep route", func(l *modelsv1.DesiredLRP) { l.Routes["deep"] = nestedRoute(t, 4998) },
			[]string{"invalid field routes[deep]: must nest at most 16 levels"}},
		{"NUL in routes", func(l *modelsv1.DesiredLRP) {
			l.Routes["a"] = structpb.NewStringValue("x\x00")
			l.Routes["b"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"k\x00": structpb.NewNullValue()}})
		}, []string{"invalid field routes[a]: must not contain NUL characters", "invalid field routes[b]: must not contain NUL characters"}},
		{"volume drivers are identifiers", func(l *modelsv1.DesiredLRP) { l.VolumeMounts[0].Driver = "nfs\x00" },
			[]string{"invalid field volume_mounts[0].driver: must not contain control characters"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lrp := fullDesiredLRP(t)
			tc.mutate(lrp)
			err := models.ValidateRequest(&bbsv1.DesireLRPRequest{DesiredLrp: lrp})
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			requireInvalid(t, err, tc.want...)
		})
	}
}

func TestRequestLimits(t *testing.T) {
	long := strings.Repeat("x", models.MaxIdentifierLength+1)
	key := &modelsv1.ActualLRPKey{ProcessGuid: "pg", Domain: "d"}
	ik := &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "cell-1"}
	net := &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1"}
	cases := []struct {
		name string
		req  any
		want []string
	}{
		{"update instances", &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "pg", Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(models.MaxInstances + 1)}},
			[]string{"invalid field instances: must be at most 10000"}},
		{"update guid", &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: long, Update: &modelsv1.DesiredLRPUpdate{}},
			[]string{"invalid field process_guid: must be at most 255 bytes"}},
		{"update metric tags and routes", &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "pg", Update: &modelsv1.DesiredLRPUpdate{
			MetricTags: metricTags(models.MaxMetricTags + 1),
			Routes:     map[string]*structpb.Value{"deep": nestedRoute(t, models.MaxRoutesDepth+1)},
			Annotation: proto.String("\x00"),
		}}, []string{
			"invalid field metric_tags: must have at most 64 tags", "invalid field routes[deep]: must nest at most 16 levels",
			"invalid field annotation: must not contain NUL characters",
		}},
		{"get desired", &bbsv1.GetDesiredLRPRequest{ProcessGuid: long}, []string{"invalid field process_guid: must be at most 255 bytes"}},
		{"remove desired", &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: "pg\x00"}, []string{"invalid field process_guid: must not contain control characters"}},
		{"scheduling info", &bbsv1.GetDesiredLRPSchedulingInfoRequest{ProcessGuid: long}, []string{"invalid field process_guid: must be at most 255 bytes"}},
		{"list desired filters", &bbsv1.ListDesiredLRPsRequest{Domain: long, ProcessGuids: []string{"ok", "\x00"}}, []string{
			"invalid field domain: must be at most 255 bytes", "invalid field process_guids[1]: must not contain control characters",
		}},
		{"list scheduling infos filters", &bbsv1.ListDesiredLRPSchedulingInfosRequest{Domain: "\x00"}, []string{"invalid field domain: must not contain control characters"}},
		{"list routing infos filters", &bbsv1.ListDesiredLRPRoutingInfosRequest{ProcessGuids: []string{long}}, []string{"invalid field process_guids[0]: must be at most 255 bytes"}},
		{"list actual filters", &bbsv1.ListActualLRPsRequest{Domain: "\x00", CellId: long, ProcessGuid: "a\x7f"}, []string{
			"invalid field domain: must not contain control characters", "invalid field cell_id: must be at most 255 bytes",
			"invalid field process_guid: must not contain control characters (U+007F at byte 1)",
		}},
		{"claim", &bbsv1.ClaimActualLRPRequest{ProcessGuid: long, ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{InstanceGuid: long, CellId: "cell\x00"}}, []string{
			"invalid field process_guid: must be at most 255 bytes", "invalid field actual_lrp_instance_key.instance_guid: must be at most 255 bytes",
			"invalid field actual_lrp_instance_key.cell_id: must not contain control characters",
		}},
		{"start", &bbsv1.StartActualLRPRequest{
			ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "pg", Domain: long}, ActualLrpInstanceKey: ik,
			ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{Address: long, InstanceAddress: "\x00"},
			InternalRoutes:   []string{long}, MetricTags: map[string]string{"k": long}, AvailabilityZone: "z\n",
		}, []string{
			"invalid field actual_lrp_key.domain: must be at most 255 bytes", "invalid field actual_lrp_net_info.address: must be at most 255 bytes",
			"invalid field actual_lrp_net_info.instance_address: must not contain control characters", "invalid field internal_routes[0]: must be at most 255 bytes",
			"invalid field metric_tags[k]: must be at most 255 bytes", "invalid field availability_zone: must not contain control characters",
		}},
		{"evacuate running", &bbsv1.EvacuateRunningActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik, ActualLrpNetInfo: net,
			MetricTags: func() map[string]string {
				m := map[string]string{}
				for i := range models.MaxMetricTags + 1 {
					m[fmt.Sprint(i)] = "v"
				}
				return m
			}()}, []string{"invalid field metric_tags: must have at most 64 entries"}},
		{"crash", &bbsv1.CrashActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: long, Domain: "d"}, ActualLrpInstanceKey: ik, ErrorMessage: strings.Repeat("e", models.MaxStringLength+1)}, []string{
			"invalid field actual_lrp_key.process_guid: must be at most 255 bytes", "invalid field error_message: must be at most 131072 bytes",
		}},
		{"retire", &bbsv1.RetireActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "pg", Domain: "\x00"}}, []string{"invalid field actual_lrp_key.domain: must not contain control characters"}},
		{"desire task", &bbsv1.DesireTaskRequest{TaskGuid: long, Domain: "d\x00", TaskDefinition: func() *modelsv1.TaskDefinition {
			d := validTaskDefinition()
			d.Action = serialChain(models.MaxActionDepth + 1)
			d.Env = envVars(models.MaxEnvironmentVariables + 1)
			d.EgressRules = egressRules(models.MaxEgressRules + 1)
			d.PlacementTags = tags(models.MaxPlacementTags + 1)
			d.LogGuid, d.CompletionCallbackUrl = long, "http://cc/\x00"
			return d
		}()}, []string{
			"invalid field task_guid: must be at most 255 bytes", "invalid field domain: must not contain control characters",
			"invalid field task_definition.action.serial", "at most 16 actions deep", "invalid field task_definition.env: must have at most 256 variables",
			"invalid field task_definition.egress_rules: must have at most 1000 rules", "invalid field task_definition.placement_tags: must have at most 32 entries",
			"invalid field task_definition.log_guid: must be at most 255 bytes", "invalid field task_definition.completion_callback_url: must not contain NUL characters",
		}},
		{"list tasks filters", &bbsv1.ListTasksRequest{Domain: long, CellId: "\x00"}, []string{
			"invalid field domain: must be at most 255 bytes", "invalid field cell_id: must not contain control characters",
		}},
		{"start task", &bbsv1.StartTaskRequest{TaskGuid: long, CellId: long}, []string{"invalid field task_guid: must be at most 255 bytes", "invalid field cell_id: must be at most 255 bytes"}},
		{"complete task result", &bbsv1.CompleteTaskRequest{TaskGuid: "tg", CellId: "c", Result: strings.Repeat("r", models.MaxTaskResultLength+1)},
			[]string{"invalid field result: must be at most 10240 bytes"}},
		{"complete task result with NUL", &bbsv1.CompleteTaskRequest{TaskGuid: "tg", CellId: "c", Result: "\x00"},
			[]string{"invalid field result: must not contain NUL characters"}},
		{"cancel task", &bbsv1.CancelTaskRequest{TaskGuid: "t\x00"}, []string{"invalid field task_guid: must not contain control characters"}},
		{"upsert domain", &bbsv1.UpsertDomainRequest{Domain: long}, []string{"invalid field domain: must be at most 255 bytes"}},
		{"upsert domain NUL", &bbsv1.UpsertDomainRequest{Domain: "cf\x00"}, []string{"invalid field domain: must not contain control characters (U+0000 at byte 2)"}},
		{"heartbeat", &bbsv1.HeartbeatCellRequest{TtlSeconds: 1, CellPresence: func() *modelsv1.CellPresence {
			c := validCellPresence()
			c.CellId, c.RepAddress, c.Zone = "cell\x1b", long, long
			c.PlacementTags = tags(models.MaxPlacementTags + 1)
			c.OptionalPlacementTags = []string{"\x00"}
			c.RootfsProviders = []*modelsv1.RootFSProvider{{Name: long, Properties: []string{"cflinuxfs4\n"}}}
			c.Annotations = map[string]string{long: "v"}
			return c
		}()}, []string{
			"invalid field cell_presence.cell_id: must not contain control characters", "invalid field cell_presence.rep_address: must be at most 255 bytes",
			"invalid field cell_presence.zone: must be at most 255 bytes", "invalid field cell_presence.placement_tags: must have at most 32 entries",
			"invalid field cell_presence.optional_placement_tags[0]: must not contain control characters",
			"invalid field cell_presence.rootfs_providers[0].name: must be at most 255 bytes",
			"invalid field cell_presence.rootfs_providers[0].properties[0]: must not contain control characters",
			"key must be at most 255 bytes",
		}},
		{"remove cell", &bbsv1.RemoveCellRequest{CellId: long}, []string{"invalid field cell_id: must be at most 255 bytes"}},
		{"cordon", &bbsv1.CordonCellRequest{CellId: "c\x00", Reason: strings.Repeat("r", models.MaxReasonLength+1)}, []string{
			"invalid field cell_id: must not contain control characters", "invalid field reason: must be at most 1024 bytes",
		}},
		{"cordon reason with NUL", &bbsv1.CordonCellRequest{CellId: "c", Reason: "disk\x00"}, []string{"invalid field reason: must not contain NUL characters"}},
		{"uncordon", &bbsv1.UncordonCellRequest{CellId: long}, []string{"invalid field cell_id: must be at most 255 bytes"}},
		{"locks", &bbsv1.AcquireLockRequest{Key: long, Owner: "o\x00", TtlSeconds: 1, Value: strings.Repeat("v", models.MaxStringLength+1)}, []string{
			"invalid field key: must be at most 255 bytes", "invalid field owner: must not contain control characters",
			"invalid field value: must be at most 131072 bytes",
		}},
		{"release lock", &bbsv1.ReleaseLockRequest{Key: "k", Owner: long}, []string{"invalid field owner: must be at most 255 bytes"}},
		{"fetch lock", &bbsv1.FetchLockRequest{Key: "\x00"}, []string{"invalid field key: must not contain control characters"}},
		{"subscribe", &bbsv1.SubscribeRequest{CellId: long}, []string{"invalid field cell_id: must be at most 255 bytes"}},
		{"pause converger", &bbsv1.SetConvergerPausedRequest{Paused: true, Reason: strings.Repeat("r", models.MaxReasonLength+1)},
			[]string{"invalid field reason: must be at most 1024 bytes"}},
		{"request auctions", &bbsv1.RequestAuctionsRequest{Lrps: []*bbsv1.LRPIndices{{ProcessGuid: long}}, TaskGuids: []string{"\x00"}}, []string{
			"invalid field lrps[0].process_guid: must be at most 255 bytes", "invalid field task_guids[0]: must not contain control characters",
		}},
		{"converger actions", &bbsv1.ApplyLRPActionsRequest{Actions: []*bbsv1.LRPAction{{Action: &bbsv1.LRPAction_Unclaim{Unclaim: &bbsv1.LRPRowCondition{
			Key: &modelsv1.ActualLRPKey{ProcessGuid: "pg\x00"},
		}}}}}, []string{"invalid field actions[0].unclaim.key.process_guid: must not contain NUL characters"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireInvalid(t, models.ValidateRequest(tc.req), tc.want...)
		})
	}
}

func TestReasonsAreCleanedNotRefused(t *testing.T) {
	key := &modelsv1.ActualLRPKey{ProcessGuid: "pg", Domain: "d"}
	ik := &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "cell-1"}
	for _, req := range []any{
		&bbsv1.CrashActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik, ErrorMessage: "exit \x00"},
		&bbsv1.EvacuateCrashedActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik, ErrorMessage: "exit \x00"},
		&bbsv1.FailActualLRPRequest{ActualLrpKey: key, ErrorMessage: "no \x00 cells"},
		&bbsv1.FailTaskRequest{TaskGuid: "tg", FailureReason: "\x00"},
		&bbsv1.RejectTaskRequest{TaskGuid: "tg", RejectionReason: "\x00"},
		&bbsv1.CompleteTaskRequest{TaskGuid: "tg", CellId: "c", Failed: true, FailureReason: "\x00"},
	} {
		t.Run(typeName(req), func(t *testing.T) {
			require.NoError(t, models.ValidateRequest(req))
		})
	}
	require.Equal(t, "exit \uFFFD", models.TruncateReason("exit \x00"))
}

func TestErrorsListAtMostFiftyViolations(t *testing.T) {
	def := validTaskDefinition()
	def.Action.GetRun().Args = repeated(80, func(int) string { return "\x00" })
	err := models.ValidateRequest(&bbsv1.DesireTaskRequest{TaskGuid: "tg", Domain: "d", TaskDefinition: def})
	requireInvalid(t, err, "task_definition.action.run.args[49]: must not contain NUL", "; and 30 more violations")
	require.NotContains(t, err.Error(), "args[50]")
}

func TestDeeplyNestedMessagesAreBounded(t *testing.T) {
	// Any message recursion is bounded; actions are the one recursive message a request holds.
	err := models.ValidateRequest(&bbsv1.DesireTaskRequest{TaskGuid: "tg", Domain: "d", TaskDefinition: &modelsv1.TaskDefinition{
		Rootfs: "docker:///busybox", Action: serialChain(200),
	}})
	requireInvalid(t, err, "at most 16 actions deep", "must nest at most 64 messages deep")
}

// TestDeepestValidRequestsStayDecodable checks what the depth limits are for: an event
// carrying the deepest action tree and routes a request may hold decodes even where
// protobuf stops at 100 levels (C++, Java), and as JSON.
func TestDeepestValidRequestsStayDecodable(t *testing.T) {
	lrp := fullDesiredLRP(t)
	lrp.Action = serialChain(models.MaxActionDepth)
	lrp.Setup = nestedActions(models.MaxActionDepth)
	lrp.Routes["deep"] = nestedRoute(t, models.MaxRoutesDepth)
	require.NoError(t, models.ValidateRequest(&bbsv1.DesireLRPRequest{DesiredLrp: lrp}))
	task := &modelsv1.Task{TaskGuid: "tg", Domain: "d", TaskDefinition: validTaskDefinition()}
	task.TaskDefinition.Action = nestedActions(models.MaxActionDepth)
	require.NoError(t, models.ValidateRequest(&bbsv1.DesireTaskRequest{TaskGuid: "tg", Domain: "d", TaskDefinition: task.TaskDefinition}))

	strict := proto.UnmarshalOptions{RecursionLimit: 100}
	for _, event := range []*modelsv1.Event{
		models.DesiredLRPCreatedEvent(lrp),
		models.DesiredLRPChangedEvent(lrp, lrp),
		models.TaskChangedEvent(task, task),
		{Sequence: 1, Payload: &modelsv1.Event_DesiredLrpRemoved{DesiredLrpRemoved: &modelsv1.DesiredLRPRemovedEvent{DesiredLrp: lrp}}},
	} {
		wire, err := proto.Marshal(&bbsv1.SubscribeResponse{Event: event})
		require.NoError(t, err)
		decoded := &bbsv1.SubscribeResponse{}
		require.NoError(t, strict.Unmarshal(wire, decoded))
		require.True(t, proto.Equal(event, decoded.GetEvent()))

		js, err := protojson.Marshal(event)
		require.NoError(t, err)
		fromJSON := &modelsv1.Event{}
		require.NoError(t, protojson.UnmarshalOptions{RecursionLimit: 100}.Unmarshal(js, fromJSON))
		require.True(t, proto.Equal(event, fromJSON))
	}

	t.Run("a 50-deep tree would not decode there", func(t *testing.T) {
		lrp.Action = serialChain(50)
		wire, err := proto.Marshal(models.DesiredLRPCreatedEvent(lrp))
		require.NoError(t, err)
		require.Error(t, strict.Unmarshal(wire, &modelsv1.Event{}))
	})
}
