package models_test

import (
	"strings"
	"testing"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestValidateRequestAcceptsValidRequests(t *testing.T) {
	key := &modelsv1.ActualLRPKey{ProcessGuid: "pg", Index: 0, Domain: "d"}
	ik := &modelsv1.ActualLRPInstanceKey{InstanceGuid: "ig", CellId: "cell"}
	cases := []any{
		&bbsv1.DesireLRPRequest{DesiredLrp: seedDesiredLRP(t)},
		&bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "pg", Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(0)}},
		&bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "pg", Update: &modelsv1.DesiredLRPUpdate{ClearRoutes: true}},
		&bbsv1.RemoveDesiredLRPRequest{ProcessGuid: "pg"},
		&bbsv1.GetDesiredLRPRequest{ProcessGuid: "pg"},
		&bbsv1.GetDesiredLRPSchedulingInfoRequest{ProcessGuid: "pg"},
		&bbsv1.ListDesiredLRPsRequest{},
		&bbsv1.ListActualLRPsRequest{Index: proto.Int32(0)},
		&bbsv1.ClaimActualLRPRequest{ProcessGuid: "pg", ActualLrpInstanceKey: ik},
		&bbsv1.StartActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik, ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1"}},
		&bbsv1.CrashActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik},
		&bbsv1.EvacuateClaimedActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik},
		&bbsv1.EvacuateRunningActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik, ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1"}},
		&bbsv1.EvacuateStoppedActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik},
		&bbsv1.EvacuateCrashedActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik, ErrorMessage: "exited"},
		&bbsv1.RemoveEvacuatingActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik},
		&bbsv1.FailActualLRPRequest{ActualLrpKey: key, ErrorMessage: "insufficient resources"},
		&bbsv1.RemoveActualLRPRequest{ProcessGuid: "pg", Index: 1},
		&bbsv1.RemoveActualLRPRequest{ProcessGuid: "pg", Index: 1, ActualLrpInstanceKey: ik},
		&bbsv1.RetireActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "pg", Index: 2}},
		&bbsv1.DesireTaskRequest{TaskGuid: "tg", Domain: "d", TaskDefinition: validTaskDefinition()},
		&bbsv1.StartTaskRequest{TaskGuid: "tg", CellId: "cell"},
		&bbsv1.CompleteTaskRequest{TaskGuid: "tg", CellId: "cell", Failed: true},
		&bbsv1.GetTaskRequest{TaskGuid: "tg"},
		&bbsv1.CancelTaskRequest{TaskGuid: "tg"},
		&bbsv1.FailTaskRequest{TaskGuid: "tg"},
		&bbsv1.RejectTaskRequest{TaskGuid: "tg"},
		&bbsv1.ResolvingTaskRequest{TaskGuid: "tg"},
		&bbsv1.DeleteTaskRequest{TaskGuid: "tg"},
		&bbsv1.ListTasksRequest{},
		&bbsv1.UpsertDomainRequest{Domain: "d"},
		&bbsv1.HeartbeatCellRequest{CellPresence: validCellPresence(), TtlSeconds: 15},
		&bbsv1.RemoveCellRequest{CellId: "cell"},
		&bbsv1.CordonCellRequest{CellId: "cell"},
		&bbsv1.UncordonCellRequest{CellId: "cell"},
		&bbsv1.ReportConvergencePassRequest{Pass: &bbsv1.ConvergencePass{}},
		&bbsv1.RequestAuctionsRequest{Lrps: []*bbsv1.LRPIndices{{ProcessGuid: "pg", Indices: []int32{0, 2}}}, TaskGuids: []string{"tg"}},
		&bbsv1.AcquireLockRequest{Key: "auctioneer", Owner: "a-1", TtlSeconds: 15},
		&bbsv1.ReleaseLockRequest{Key: "auctioneer", Owner: "a-1"},
		&bbsv1.FetchLockRequest{Key: "auctioneer"},
		&bbsv1.SubscribeRequest{},
		(*bbsv1.SubscribeRequest)(nil),
		&bbsv1.ListDomainsRequest{},
		&bbsv1.ListCellsRequest{},
		&bbsv1.ListLocksRequest{},
		&bbsv1.SnapshotRequest{},
		&bbsv1.GetConvergerStatusRequest{},
		&bbsv1.SetConvergerPausedRequest{Paused: true, Reason: "maintenance"},
		&bbsv1.ApplyLRPActionsRequest{Actions: []*bbsv1.LRPAction{{Reason: "extra index"}}},
		&bbsv1.ApplyTaskActionsRequest{Actions: []*bbsv1.TaskAction{{Reason: "expired"}}},
	}
	for _, req := range cases {
		t.Run(typeName(req), func(t *testing.T) {
			require.NoError(t, models.ValidateRequest(req))
		})
	}
}

func typeName(req any) string {
	if m, ok := req.(proto.Message); ok && m != nil {
		return string(m.ProtoReflect().Descriptor().Name())
	}
	return "other"
}

func TestValidateRequestRejectsInvalidRequests(t *testing.T) {
	noSecond := seedDesiredLRP(t)
	noSecond.ProcessGuid = "bad/guid"
	cases := []struct {
		name string
		req  any
		want []string
	}{
		{"desire lrp nil", &bbsv1.DesireLRPRequest{}, []string{"invalid field desired_lrp: required"}},
		{"desire lrp typed nil", (*bbsv1.DesireLRPRequest)(nil), []string{"invalid field desired_lrp: required"}},
		{"desire lrp invalid", &bbsv1.DesireLRPRequest{DesiredLrp: noSecond}, []string{"invalid field process_guid: must match"}},
		{"update guid and nil update", &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "a b"}, []string{"invalid field process_guid: must match", "invalid field update: required"}},
		{"update rules", &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "pg", Update: &modelsv1.DesiredLRPUpdate{
			Instances:     proto.Int32(-1),
			Annotation:    proto.String(strings.Repeat("a", models.MaxAnnotationLength+1)),
			Routes:        map[string]*structpb.Value{"cf-router": structpb.NewStringValue(strings.Repeat("r", models.MaxRoutesLength))},
			ClearRoutes:   true,
			MetricTags:    map[string]*modelsv1.MetricTagValue{"t": {}},
			ImageUsername: proto.String("u"),
		}}, []string{
			"invalid field instances: must be >= 0", "invalid field annotation: must be at most 10240 bytes",
			"invalid field routes: must be at most", "invalid field clear_routes: must not be set together with routes",
			"invalid field metric_tags[t]: must set exactly one", "invalid field image_password: required when image_username is set",
		}},
		{"update credentials both present, one empty", &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "pg", Update: &modelsv1.DesiredLRPUpdate{
			ImageUsername: proto.String(""), ImagePassword: proto.String("p"),
		}}, []string{"invalid field image_username: required when image_password is set"}},
		{"remove desired", &bbsv1.RemoveDesiredLRPRequest{}, []string{"invalid field process_guid: required"}},
		{"get desired", &bbsv1.GetDesiredLRPRequest{}, []string{"invalid field process_guid: required"}},
		{"get scheduling info", &bbsv1.GetDesiredLRPSchedulingInfoRequest{}, []string{"invalid field process_guid: required"}},
		{"list actuals negative index", &bbsv1.ListActualLRPsRequest{Index: proto.Int32(-1)}, []string{"invalid field index: must be >= 0"}},
		{"claim", &bbsv1.ClaimActualLRPRequest{Index: -1}, []string{"invalid field process_guid: required", "invalid field index: must be >= 0", "invalid field actual_lrp_instance_key: required"}},
		{"claim empty instance key", &bbsv1.ClaimActualLRPRequest{ProcessGuid: "pg", ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{}}, []string{
			"invalid field actual_lrp_instance_key.instance_guid: required", "invalid field actual_lrp_instance_key.cell_id: required",
		}},
		{"start", &bbsv1.StartActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{Index: -1}}, []string{
			"invalid field actual_lrp_key.process_guid: required", "invalid field actual_lrp_key.index: must be >= 0",
			"invalid field actual_lrp_key.domain: required", "invalid field actual_lrp_instance_key: required", "invalid field actual_lrp_net_info: required",
		}},
		{"start without address", &bbsv1.StartActualLRPRequest{
			ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "pg", Domain: "d"}, ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{InstanceGuid: "i", CellId: "c"},
			ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{InstanceAddress: "10.1.1.1"},
		}, []string{"invalid field actual_lrp_net_info.address: required"}},
		{"crash", &bbsv1.CrashActualLRPRequest{}, []string{"invalid field actual_lrp_key: required", "invalid field actual_lrp_instance_key: required"}},
		{"evacuate claimed", &bbsv1.EvacuateClaimedActualLRPRequest{}, []string{"invalid field actual_lrp_key: required", "invalid field actual_lrp_instance_key: required"}},
		{"evacuate running", &bbsv1.EvacuateRunningActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "pg", Domain: "d"}}, []string{
			"invalid field actual_lrp_instance_key: required", "invalid field actual_lrp_net_info: required",
		}},
		{"evacuate stopped", &bbsv1.EvacuateStoppedActualLRPRequest{ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{CellId: "c"}}, []string{
			"invalid field actual_lrp_key: required", "invalid field actual_lrp_instance_key.instance_guid: required",
		}},
		{"evacuate crashed", &bbsv1.EvacuateCrashedActualLRPRequest{}, []string{"invalid field actual_lrp_key: required", "invalid field actual_lrp_instance_key: required"}},
		{"remove evacuating", &bbsv1.RemoveEvacuatingActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{Index: -1}}, []string{
			"invalid field actual_lrp_key.index: must be >= 0", "invalid field actual_lrp_instance_key: required",
		}},
		{"fail", &bbsv1.FailActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "pg"}}, []string{"invalid field actual_lrp_key.domain: required", "invalid field error_message: required"}},
		{"remove actual", &bbsv1.RemoveActualLRPRequest{Index: -1, ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{CellId: "c"}}, []string{
			"invalid field process_guid: required", "invalid field index: must be >= 0", "invalid field actual_lrp_instance_key.instance_guid: required",
		}},
		{"retire", &bbsv1.RetireActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{Index: -1}}, []string{
			"invalid field actual_lrp_key.process_guid: required", "invalid field actual_lrp_key.index: must be >= 0",
		}},
		{"retire without key", &bbsv1.RetireActualLRPRequest{}, []string{"invalid field actual_lrp_key: required"}},
		{"desire task", &bbsv1.DesireTaskRequest{TaskGuid: "t g"}, []string{
			"invalid field task_guid: must match", "invalid field domain: required", "invalid field task_definition: required",
		}},
		{"desire task definition", &bbsv1.DesireTaskRequest{TaskGuid: "tg", Domain: "d", TaskDefinition: &modelsv1.TaskDefinition{MemoryMb: -1}}, []string{
			"invalid field task_definition.rootfs: required", "invalid field task_definition.action: required", "invalid field task_definition.memory_mb: must be >= 0",
		}},
		{"start task", &bbsv1.StartTaskRequest{}, []string{"invalid field task_guid: required", "invalid field cell_id: required"}},
		{"complete task", &bbsv1.CompleteTaskRequest{TaskGuid: "tg"}, []string{"invalid field cell_id: required"}},
		{"get task", &bbsv1.GetTaskRequest{}, []string{"invalid field task_guid: required"}},
		{"cancel task", &bbsv1.CancelTaskRequest{}, []string{"invalid field task_guid: required"}},
		{"fail task", &bbsv1.FailTaskRequest{}, []string{"invalid field task_guid: required"}},
		{"reject task", &bbsv1.RejectTaskRequest{}, []string{"invalid field task_guid: required"}},
		{"resolving task", &bbsv1.ResolvingTaskRequest{}, []string{"invalid field task_guid: required"}},
		{"delete task", &bbsv1.DeleteTaskRequest{}, []string{"invalid field task_guid: required"}},
		{"upsert domain", &bbsv1.UpsertDomainRequest{TtlSeconds: 10}, []string{"invalid field domain: required"}},
		{"heartbeat", &bbsv1.HeartbeatCellRequest{}, []string{"invalid field cell_presence: required", "invalid field ttl_seconds: must be > 0"}},
		{"heartbeat presence", &bbsv1.HeartbeatCellRequest{CellPresence: &modelsv1.CellPresence{RepUrl: "ftp://x"}, TtlSeconds: 1}, []string{
			"invalid field cell_presence.cell_id: required", "invalid field cell_presence.rep_address: required",
			"invalid field cell_presence.rep_url: must start with http:// or https://", "invalid field cell_presence.capacity: required",
		}},
		{"remove cell", &bbsv1.RemoveCellRequest{}, []string{"invalid field cell_id: required"}},
		{"cordon cell", &bbsv1.CordonCellRequest{Reason: "disk"}, []string{"invalid field cell_id: required"}},
		{"uncordon cell", &bbsv1.UncordonCellRequest{}, []string{"invalid field cell_id: required"}},
		{"report pass", &bbsv1.ReportConvergencePassRequest{}, []string{"invalid field pass: required"}},
		{"request auctions", &bbsv1.RequestAuctionsRequest{
			Lrps: []*bbsv1.LRPIndices{{Indices: []int32{0}}, {ProcessGuid: "pg", Indices: []int32{1, -1}}}, TaskGuids: []string{"t", ""},
		}, []string{
			"invalid field lrps[0].process_guid: required", "invalid field lrps[1].indices[1]: must be >= 0", "invalid field task_guids[1]: required",
		}},
		{"acquire lock", &bbsv1.AcquireLockRequest{}, []string{"invalid field key: required", "invalid field owner: required", "invalid field ttl_seconds: must be > 0"}},
		{"release lock", &bbsv1.ReleaseLockRequest{Key: "k"}, []string{"invalid field owner: required"}},
		{"fetch lock", &bbsv1.FetchLockRequest{}, []string{"invalid field key: required"}},
		{"unknown message type", &modelsv1.ActualLRP{}, []string{"unknown request type drover.models.v1.ActualLRP"}},
		{"response type", &bbsv1.GetTaskResponse{}, []string{"unknown request type drover.bbs.v1.GetTaskResponse"}},
		{"not a message", "not a request", []string{"unknown request type string"}},
		{"nil", nil, []string{"unknown request type <nil>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireInvalid(t, models.ValidateRequest(tc.req), tc.want...)
		})
	}
}

func TestValidateCellPresence(t *testing.T) {
	require.NoError(t, models.ValidateCellPresence(validCellPresence()))
	withHTTP := validCellPresence()
	withHTTP.RepUrl = "http://cell"
	withHTTP.Capacity.DiskMb = 0
	require.NoError(t, models.ValidateCellPresence(withHTTP))

	requireInvalid(t, models.ValidateCellPresence(nil), "invalid field cell_presence: required")
	bad := validCellPresence()
	bad.Capacity = &modelsv1.CellCapacity{MemoryMb: 0, DiskMb: -1, Containers: 0}
	bad.Annotations = map[string]string{"": "v", "k": ""}
	requireInvalid(t, models.ValidateCellPresence(bad),
		"invalid field capacity.memory_mb: must be > 0", "invalid field capacity.disk_mb: must be >= 0",
		"invalid field capacity.containers: must be > 0", "invalid field annotations[]: key must not be empty",
		"invalid field annotations[k]: value must not be empty")
}

func TestValidateTaskDefinition(t *testing.T) {
	require.NoError(t, models.ValidateTaskDefinition(validTaskDefinition()))
	requireInvalid(t, models.ValidateTaskDefinition(nil), "invalid field task_definition: required")

	def := validTaskDefinition()
	def.Rootfs = "no-scheme"
	def.DiskMb, def.MaxPids = -1, -1
	def.Annotation = strings.Repeat("a", models.MaxAnnotationLength+1)
	def.EgressRules = []*modelsv1.EgressRule{{Protocol: "tcp", Destinations: []string{"1.1.1.1"}}}
	def.ImageUsername = "u"
	def.CachedDependencies = []*modelsv1.CachedDependency{{From: "f"}}
	def.ImageLayers = []*modelsv1.ImageLayer{{Url: "u", DestinationPath: "/d", LayerType: modelsv1.ImageLayer_LAYER_TYPE_EXCLUSIVE, MediaType: modelsv1.ImageLayer_MEDIA_TYPE_TGZ, DigestAlgorithm: "sha512", DigestValue: "x"}}
	requireInvalid(t, models.ValidateTaskDefinition(def),
		"invalid field rootfs: must be a URL with a scheme", "invalid field disk_mb: must be >= 0",
		"invalid field max_pids: must be >= 0", "invalid field annotation: must be at most",
		"invalid field egress_rules[0]: tcp and udp rules need exactly one of ports or port_range",
		"invalid field image_password: required when image_username is set",
		"invalid field cached_dependencies[0].to: required",
		"invalid field legacy_download_user: required when an image layer is EXCLUSIVE")
}

func TestValidateDesiredLRPUpdate(t *testing.T) {
	require.NoError(t, models.ValidateDesiredLRPUpdate(&modelsv1.DesiredLRPUpdate{}))
	require.NoError(t, models.ValidateDesiredLRPUpdate(&modelsv1.DesiredLRPUpdate{
		ImageUsername: proto.String("u"), ImagePassword: proto.String("p"),
		MetricTags: map[string]*modelsv1.MetricTagValue{"i": {Dynamic: modelsv1.MetricTagValue_DYNAMIC_INDEX}},
	}))
	requireInvalid(t, models.ValidateDesiredLRPUpdate(nil), "invalid field update: required")
	requireInvalid(t, models.ValidateDesiredLRPUpdate(&modelsv1.DesiredLRPUpdate{ImagePassword: proto.String("p")}),
		"invalid field image_username: required when image_password is set")
}

// acceptsEmpty are the drover.bbs.v1 requests whose every field is optional: an empty
// one is valid, knowingly.
var acceptsEmpty = map[protoreflect.FullName]bool{
	"drover.bbs.v1.ListDesiredLRPsRequest":               true,
	"drover.bbs.v1.ListDesiredLRPSchedulingInfosRequest": true,
	"drover.bbs.v1.ListDesiredLRPRoutingInfosRequest":    true,
	"drover.bbs.v1.ListActualLRPsRequest":                true,
	"drover.bbs.v1.ListTasksRequest":                     true,
	"drover.bbs.v1.ListDomainsRequest":                   true,
	"drover.bbs.v1.ListCellsRequest":                     true,
	"drover.bbs.v1.ListLocksRequest":                     true,
	"drover.bbs.v1.SubscribeRequest":                     true,
	"drover.bbs.v1.SnapshotRequest":                      true,
	"drover.bbs.v1.ApplyLRPActionsRequest":               true,
	"drover.bbs.v1.ApplyTaskActionsRequest":              true,
	"drover.bbs.v1.GetConvergerStatusRequest":            true,
	"drover.bbs.v1.SetConvergerPausedRequest":            true,
	"drover.bbs.v1.RequestAuctionsRequest":               true,
}

// TestEveryRPCIsValidated walks every method of every drover.bbs.v1 service in the
// generated descriptors and validates an empty request of its input type: it is either
// refused for what it lacks or, for the requests in acceptsEmpty, accepted. It is never
// refused as an unknown type, so that a new RPC cannot skip validation.
func TestEveryRPCIsValidated(t *testing.T) {
	seen := map[protoreflect.FullName]bool{}
	methods := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("drover.bbs.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			service := f.Services().Get(i)
			for j := range service.Methods().Len() {
				method := service.Methods().Get(j)
				methods++
				input := method.Input().FullName()
				seen[input] = true
				t.Run(string(method.FullName()), func(t *testing.T) {
					typ, err := protoregistry.GlobalTypes.FindMessageByName(input)
					require.NoError(t, err)
					err = models.ValidateRequest(typ.New().Interface())
					if acceptsEmpty[input] {
						require.NoError(t, err, "an empty %s is valid", input)
						return
					}
					require.Error(t, err, "an empty %s lacks required fields", input)
					require.NotContains(t, err.Error(), "unknown request type")
					requireInvalid(t, err, ": required")
				})
			}
		}
		return true
	})
	require.NotZero(t, methods, "the drover.bbs.v1 descriptors are registered")
	for name := range acceptsEmpty {
		require.True(t, seen[name], "acceptsEmpty names %s, the input of no method", name)
	}
}
