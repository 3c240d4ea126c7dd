package models_test

import (
	"errors"
	"strings"
	"testing"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// requireInvalid asserts that err is an InvalidRequest error whose message contains
// every one of want.
func requireInvalid(t *testing.T, err error, want ...string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, &models.Error{Type: models.ErrTypeInvalidRequest})
	for _, w := range want {
		require.Contains(t, err.Error(), w)
	}
}

func action(a *modelsv1.Action) func(*modelsv1.DesiredLRP) {
	return func(l *modelsv1.DesiredLRP) { l.Action = a }
}

func egress(r *modelsv1.EgressRule) func(*modelsv1.DesiredLRP) {
	return func(l *modelsv1.DesiredLRP) { l.EgressRules = []*modelsv1.EgressRule{r} }
}

func serial(actions ...*modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{Actions: actions}}}
}

func TestValidateDesiredLRPAcceptsTheSeedAndAFullLRP(t *testing.T) {
	require.NoError(t, models.ValidateDesiredLRP(seedDesiredLRP(t)))
	require.NoError(t, models.ValidateDesiredLRP(fullDesiredLRP(t)))
	lrp := seedDesiredLRP(t)
	lrp.CpuWeight = 5000 // cpu_weight is no longer validated
	require.NoError(t, models.ValidateDesiredLRP(lrp))
}

func TestValidateDesiredLRPNil(t *testing.T) {
	requireInvalid(t, models.ValidateDesiredLRP(nil), "invalid field desired_lrp: required")
}

func TestValidateDesiredLRPRules(t *testing.T) {
	bigRoute := structpb.NewStringValue(strings.Repeat("x", models.MaxRoutesLength))
	tcp := func(r *modelsv1.EgressRule) *modelsv1.EgressRule {
		r.Protocol = "tcp"
		r.Destinations = []string{"10.0.0.1"}
		return r
	}
	cases := []struct {
		name   string
		mutate func(*modelsv1.DesiredLRP)
		want   []string
	}{
		{"process guid charset", func(l *modelsv1.DesiredLRP) { l.ProcessGuid = "a.b" }, []string{"invalid field process_guid: must match ^[a-zA-Z0-9_-]+$"}},
		{"process guid empty", func(l *modelsv1.DesiredLRP) { l.ProcessGuid = "" }, []string{"invalid field process_guid: must match"}},
		{"domain", func(l *modelsv1.DesiredLRP) { l.Domain = "" }, []string{"invalid field domain: required"}},
		{"rootfs empty", func(l *modelsv1.DesiredLRP) { l.Rootfs = "" }, []string{"invalid field rootfs: required"}},
		{"rootfs without scheme", func(l *modelsv1.DesiredLRP) { l.Rootfs = "cflinuxfs4" }, []string{"invalid field rootfs: must be a URL with a scheme"}},
		{"rootfs unparsable", func(l *modelsv1.DesiredLRP) { l.Rootfs = "preloaded://[::1" }, []string{"invalid field rootfs: must be a URL"}},
		{"negative numbers", func(l *modelsv1.DesiredLRP) {
			l.Instances, l.MemoryMb, l.DiskMb, l.MaxPids = -1, -1, -1, -1
		}, []string{"invalid field instances: must be >= 0", "invalid field memory_mb: must be >= 0", "invalid field disk_mb: must be >= 0", "invalid field max_pids: must be >= 0"}},
		{"annotation too long", func(l *modelsv1.DesiredLRP) { l.Annotation = strings.Repeat("a", models.MaxAnnotationLength+1) }, []string{"invalid field annotation: must be at most 10240 bytes"}},
		{"routes too long", func(l *modelsv1.DesiredLRP) { l.Routes["big"] = bigRoute }, []string{"invalid field routes: must be at most 131072 bytes"}},
		{"metric tag with both", func(l *modelsv1.DesiredLRP) {
			l.MetricTags = map[string]*modelsv1.MetricTagValue{"x": {Static: "s", Dynamic: modelsv1.MetricTagValue_DYNAMIC_INDEX}}
		}, []string{"invalid field metric_tags[x]: must set exactly one of static or dynamic"}},
		{"metric tag with neither", func(l *modelsv1.DesiredLRP) {
			l.MetricTags = map[string]*modelsv1.MetricTagValue{"x": {}, "y": nil}
		}, []string{"metric_tags[x]: must set exactly one", "metric_tags[y]: must set exactly one"}},
		{"metric tag unknown dynamic", func(l *modelsv1.DesiredLRP) {
			l.MetricTags = map[string]*modelsv1.MetricTagValue{"x": {Dynamic: 7}}
		}, []string{"invalid field metric_tags[x].dynamic: must be INDEX or INSTANCE_GUID"}},
		{"source id differs from metrics guid", func(l *modelsv1.DesiredLRP) {
			l.MetricTags = map[string]*modelsv1.MetricTagValue{"source_id": {Static: "other"}}
		}, []string{"invalid field metric_tags[source_id].static: must equal metrics_guid"}},
		{"log rate limit", func(l *modelsv1.DesiredLRP) { l.LogRateLimit = &modelsv1.LogRateLimit{BytesPerSecond: -2} }, []string{"invalid field log_rate_limit.bytes_per_second: must be >= -1"}},
		{"volume mounted files too big", func(l *modelsv1.DesiredLRP) {
			l.VolumeMountedFiles = []*modelsv1.File{{Path: "/a", Content: strings.Repeat("a", 600*1024)}, {Path: "/b", Content: strings.Repeat("b", 600*1024)}}
		}, []string{"invalid field volume_mounted_files: total content must be at most 1048576 bytes"}},
		{"action missing", action(nil), []string{"invalid field action: required"}},
		{"action empty", action(&modelsv1.Action{}), []string{"invalid field action: must set exactly one action"}},
		{"setup invalid", func(l *modelsv1.DesiredLRP) { l.Setup = serial(runAction("/a"), runAction("")) }, []string{"invalid field setup.serial.actions[1].run.path: required"}},
		{"monitor invalid", func(l *modelsv1.DesiredLRP) { l.Monitor = &modelsv1.Action{} }, []string{"invalid field monitor: must set exactly one action"}},
		{"env name", func(l *modelsv1.DesiredLRP) { l.Env = []*modelsv1.EnvironmentVariable{{Value: "v"}} }, []string{"invalid field env[0].name: required"}},
		{"image password without username", func(l *modelsv1.DesiredLRP) { l.ImageUsername = "" }, []string{"invalid field image_username: required when image_password is set"}},
		{"image username without password", func(l *modelsv1.DesiredLRP) { l.ImagePassword = "" }, []string{"invalid field image_password: required when image_username is set"}},
		{"check with both", func(l *modelsv1.DesiredLRP) {
			l.CheckDefinition = &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: 1}, HttpCheck: &modelsv1.HTTPCheck{Port: 1}}}}
		}, []string{"invalid field check_definition.checks[0]: must set exactly one of http_check or tcp_check"}},
		{"check with neither", func(l *modelsv1.DesiredLRP) {
			l.CheckDefinition = &modelsv1.CheckDefinition{ReadinessChecks: []*modelsv1.Check{{}, nil}}
		}, []string{"check_definition.readiness_checks[0]: must set exactly one", "check_definition.readiness_checks[1]: must set exactly one"}},
		{"check ports", func(l *modelsv1.DesiredLRP) {
			l.CheckDefinition = &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{}}, {HttpCheck: &modelsv1.HTTPCheck{Port: 65536}}}}
		}, []string{"invalid field check_definition.checks[0].tcp_check.port: must be between 1 and 65535", "check_definition.checks[1].http_check.port: must be between 1 and 65535"}},
		{"volume mount", func(l *modelsv1.DesiredLRP) {
			l.VolumeMounts = []*modelsv1.VolumeMount{
				{Mode: "x", Shared: &modelsv1.SharedDevice{}},
				{Driver: "d", Mode: "r", Dedicated: &modelsv1.DedicatedDevice{}},
				{Driver: "d", Mode: "r"},
				{Driver: "d", Mode: "r", Shared: &modelsv1.SharedDevice{VolumeId: "v"}, Dedicated: &modelsv1.DedicatedDevice{MounterId: "m"}},
			}
		}, []string{
			"invalid field volume_mounts[0].driver: required", "volume_mounts[0].mode: must be one of r, rw",
			"volume_mounts[0].shared.volume_id: required", "volume_mounts[1].dedicated.mounter_id: required",
			"volume_mounts[2]: must set exactly one of shared or dedicated", "volume_mounts[3]: must set exactly one of shared or dedicated",
		}},
		{"image layer fields", func(l *modelsv1.DesiredLRP) {
			l.ImageLayers = []*modelsv1.ImageLayer{{DigestAlgorithm: "md5", DigestValue: "x"}}
		}, []string{
			"image_layers[0].url: required", "image_layers[0].destination_path: required",
			"image_layers[0].layer_type: must be SHARED or EXCLUSIVE", "image_layers[0].media_type: must be TGZ, TAR or ZIP",
			"image_layers[0].digest_algorithm: must be one of sha256, sha512",
		}},
		{"image layer digest pair", func(l *modelsv1.DesiredLRP) {
			l.ImageLayers = []*modelsv1.ImageLayer{{Url: "u", DestinationPath: "/d", LayerType: modelsv1.ImageLayer_LAYER_TYPE_SHARED, MediaType: modelsv1.ImageLayer_MEDIA_TYPE_TAR, DigestValue: "x"}}
		}, []string{"invalid field image_layers[0].digest_algorithm: required when digest_value is set"}},
		{"exclusive layer needs digest and user", func(l *modelsv1.DesiredLRP) {
			l.LegacyDownloadUser = ""
			l.ImageLayers = []*modelsv1.ImageLayer{{Url: "u", DestinationPath: "/d", LayerType: modelsv1.ImageLayer_LAYER_TYPE_EXCLUSIVE, MediaType: modelsv1.ImageLayer_MEDIA_TYPE_ZIP}}
		}, []string{"image_layers[0].digest_algorithm: required for EXCLUSIVE layers", "image_layers[0].digest_value: required for EXCLUSIVE layers", "invalid field legacy_download_user: required when an image layer is EXCLUSIVE"}},
		{"cached dependency", func(l *modelsv1.DesiredLRP) {
			l.CachedDependencies = []*modelsv1.CachedDependency{{ChecksumAlgorithm: "crc32", ChecksumValue: "x"}, {From: "f", To: "t", ChecksumAlgorithm: "md5"}}
		}, []string{
			"cached_dependencies[0].from: required", "cached_dependencies[0].to: required",
			"cached_dependencies[0].checksum_algorithm: must be one of md5, sha1, sha256",
			"cached_dependencies[1].checksum_value: required when checksum_algorithm is set",
		}},
		{"download action", action(&modelsv1.Action{Action: &modelsv1.Action_Download{Download: &modelsv1.DownloadAction{ChecksumValue: "x"}}}), []string{
			"action.download.from: required", "action.download.to: required", "action.download.user: required",
			"action.download.checksum_algorithm: required when checksum_value is set",
		}},
		{"upload action", action(&modelsv1.Action{Action: &modelsv1.Action_Upload{Upload: &modelsv1.UploadAction{}}}), []string{
			"action.upload.from: required", "action.upload.to: required", "action.upload.user: required",
		}},
		{"run action", action(&modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Env: []*modelsv1.EnvironmentVariable{{}}}}}), []string{
			"action.run.path: required", "action.run.user: required", "action.run.env[0].name: required",
		}},
		{"timeout action", action(&modelsv1.Action{Action: &modelsv1.Action_Timeout{Timeout: &modelsv1.TimeoutAction{}}}), []string{
			"action.timeout.action: required", "action.timeout.timeout_ms: must be > 0",
		}},
		{"emit progress and try", func(l *modelsv1.DesiredLRP) {
			l.Action = serial(
				&modelsv1.Action{Action: &modelsv1.Action_EmitProgress{EmitProgress: &modelsv1.EmitProgressAction{}}},
				&modelsv1.Action{Action: &modelsv1.Action_Try{Try: &modelsv1.TryAction{}}},
				nil,
			)
		}, []string{"action.serial.actions[0].emit_progress.action: required", "action.serial.actions[1].try.action: required", "action.serial.actions[2]: required"}},
		{"empty compound actions", func(l *modelsv1.DesiredLRP) {
			l.Action = &modelsv1.Action{Action: &modelsv1.Action_Parallel{Parallel: &modelsv1.ParallelAction{}}}
			l.Setup = &modelsv1.Action{Action: &modelsv1.Action_Codependent{Codependent: &modelsv1.CodependentAction{}}}
			l.Monitor = serial()
		}, []string{"action.parallel.actions: must have at least one action", "setup.codependent.actions: must have at least one action", "monitor.serial.actions: must have at least one action"}},
		{"nested deep", func(l *modelsv1.DesiredLRP) {
			l.Setup = serial(runAction("/a"), &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/b"}}})
		}, []string{"invalid field setup.serial.actions[1].run.user: required"}},
		{"egress protocol", egress(&modelsv1.EgressRule{Protocol: "sctp", Destinations: []string{"1.2.3.4"}}), []string{"invalid field egress_rules[0].protocol: must be one of tcp, udp, icmp, all"}},
		{"egress icmpv6 refused", egress(&modelsv1.EgressRule{Protocol: "icmpv6", Destinations: []string{"::1"}}), []string{"invalid field egress_rules[0].protocol: must be one of tcp, udp, icmp, all"}},
		{"egress tcp needs ports", egress(tcp(&modelsv1.EgressRule{})), []string{"invalid field egress_rules[0]: tcp and udp rules need exactly one of ports or port_range"}},
		{"egress tcp not both", egress(tcp(&modelsv1.EgressRule{Ports: []uint32{80}, PortRange: &modelsv1.PortRange{Start: 1, End: 2}})), []string{"egress_rules[0]: tcp and udp rules need exactly one"}},
		{"egress port values", egress(tcp(&modelsv1.EgressRule{Ports: []uint32{0, 70000}})), []string{"egress_rules[0].ports[0]: must be between 1 and 65535", "egress_rules[0].ports[1]: must be between 1 and 65535"}},
		{"egress range order", egress(tcp(&modelsv1.EgressRule{PortRange: &modelsv1.PortRange{Start: 90, End: 80}})), []string{"egress_rules[0].port_range: start must be <= end"}},
		{"egress range bounds", egress(tcp(&modelsv1.EgressRule{PortRange: &modelsv1.PortRange{Start: 0, End: 65536}})), []string{"egress_rules[0].port_range.start: must be between 1 and 65535", "egress_rules[0].port_range.end: must be between 1 and 65535"}},
		{"egress icmp needs info", egress(&modelsv1.EgressRule{Protocol: "icmp", Destinations: []string{"1.2.3.4"}}), []string{"invalid field egress_rules[0].icmp_info: required for icmp"}},
		{"egress icmp type range", egress(&modelsv1.EgressRule{Protocol: "icmp", Destinations: []string{"1.2.3.4"}, IcmpInfo: &modelsv1.ICMPInfo{Type: proto.Int32(256), Code: proto.Int32(-1)}}), []string{"egress_rules[0].icmp_info.type: must be between 0 and 255", "egress_rules[0].icmp_info.code: must be between 0 and 255"}},
		{"egress icmp type and code required", egress(&modelsv1.EgressRule{Protocol: "icmp", Destinations: []string{"1.2.3.4"}, IcmpInfo: &modelsv1.ICMPInfo{}}), []string{"egress_rules[0].icmp_info.type: required", "egress_rules[0].icmp_info.code: required"}},
		{"egress icmp code required", egress(&modelsv1.EgressRule{Protocol: "icmp", Destinations: []string{"1.2.3.4"}, IcmpInfo: &modelsv1.ICMPInfo{Type: proto.Int32(8)}}), []string{"egress_rules[0].icmp_info.code: required"}},
		{"egress icmp info on tcp", egress(tcp(&modelsv1.EgressRule{Ports: []uint32{80}, IcmpInfo: &modelsv1.ICMPInfo{}})), []string{"egress_rules[0].icmp_info: only allowed for icmp"}},
		{"egress ports on icmp", egress(&modelsv1.EgressRule{Protocol: "all", Destinations: []string{"1.2.3.4"}, Ports: []uint32{80}, PortRange: &modelsv1.PortRange{Start: 1, End: 2}}), []string{"egress_rules[0].ports: only allowed for tcp and udp", "egress_rules[0].port_range: only allowed for tcp and udp"}},
		{"egress log on udp", egress(&modelsv1.EgressRule{Protocol: "udp", Destinations: []string{"1.2.3.4"}, Ports: []uint32{53}, Log: true}), []string{"invalid field egress_rules[0].log: must not be true for udp"}},
		{"egress log on icmp", egress(&modelsv1.EgressRule{Protocol: "icmp", Destinations: []string{"1.2.3.4"}, IcmpInfo: &modelsv1.ICMPInfo{Type: proto.Int32(0), Code: proto.Int32(0)}, Log: true}), []string{"egress_rules[0].log: must not be true for icmp"}},
		{"egress no destination", egress(&modelsv1.EgressRule{Protocol: "all"}), []string{"invalid field egress_rules[0].destinations: must have at least one destination"}},
		{"egress bad destinations", egress(&modelsv1.EgressRule{Protocol: "all", Destinations: []string{"1.2.3", "2.0.0.0-1.0.0.0", "1.2.3.4/33", "1.2.3.4-::1", "example.com"}}), []string{
			"egress_rules[0].destinations[0]: must be an IP", "egress_rules[0].destinations[1]: must be an IP",
			"egress_rules[0].destinations[2]: must be an IP", "egress_rules[0].destinations[3]: must be an IP", "egress_rules[0].destinations[4]: must be an IP",
		}},
		{"egress nil rule", egress(nil), []string{"invalid field egress_rules[0]: required"}},
		{"sidecar", func(l *modelsv1.DesiredLRP) {
			l.Sidecars = []*modelsv1.Sidecar{{MemoryMb: -1, DiskMb: -1}, nil}
		}, []string{"sidecars[0].action: required", "sidecars[0].memory_mb: must be >= 0", "sidecars[0].disk_mb: must be >= 0", "sidecars[1]: required"}},
		{"ports", func(l *modelsv1.DesiredLRP) { l.Ports = []uint32{8080, 0, 65536} }, []string{"invalid field ports[1]: must be between 1 and 65535", "invalid field ports[2]: must be between 1 and 65535"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lrp := fullDesiredLRP(t)
			tc.mutate(lrp)
			requireInvalid(t, models.ValidateDesiredLRP(lrp), tc.want...)
		})
	}
}

func TestValidateDesiredLRPAcceptsEdgeValues(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*modelsv1.DesiredLRP)
	}{
		{"zero instances and limits", func(l *modelsv1.DesiredLRP) { l.Instances, l.MemoryMb, l.DiskMb, l.MaxPids = 0, 0, 0, 0 }},
		{"unlimited log rate", func(l *modelsv1.DesiredLRP) { l.LogRateLimit = &modelsv1.LogRateLimit{BytesPerSecond: -1} }},
		{"annotation at the limit", func(l *modelsv1.DesiredLRP) { l.Annotation = strings.Repeat("a", models.MaxAnnotationLength) }},
		{"no metric tags", func(l *modelsv1.DesiredLRP) { l.MetricTags = nil }},
		{"docker rootfs", func(l *modelsv1.DesiredLRP) { l.Rootfs = "docker://index.myregistry.gov/user/image#tag" }},
		{"docker rootfs runs as the image's user", func(l *modelsv1.DesiredLRP) {
			l.Rootfs = "docker://index.myregistry.gov/user/image#tag"
			l.Action = &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/b"}}}
		}},
		{"ipv6 destinations", egress(&modelsv1.EgressRule{Protocol: "all", Destinations: []string{"::1", "fd00::/8", "fd00::1-fd00::9"}})},
		{"icmp echo with type 0 code 0", egress(&modelsv1.EgressRule{Protocol: "icmp", Destinations: []string{"1.2.3.4"}, IcmpInfo: &modelsv1.ICMPInfo{Type: proto.Int32(0), Code: proto.Int32(0)}})},
		{"upper-case checksum algorithm", func(l *modelsv1.DesiredLRP) { l.CachedDependencies[0].ChecksumAlgorithm = "SHA1" }},
		{"no image credentials", func(l *modelsv1.DesiredLRP) { l.ImageUsername, l.ImagePassword = "", "" }},
		{"start timeout has no upper bound", func(l *modelsv1.DesiredLRP) { l.StartTimeout = 1 << 31 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lrp := fullDesiredLRP(t)
			tc.mutate(lrp)
			require.NoError(t, models.ValidateDesiredLRP(lrp))
		})
	}
}

func TestValidationErrorCollectsEveryViolationAndMapsToInvalidArgument(t *testing.T) {
	lrp := fullDesiredLRP(t)
	lrp.ProcessGuid, lrp.Domain, lrp.Instances = "bad guid", "", -3
	err := models.ValidateDesiredLRP(lrp)
	var me *models.Error
	require.True(t, errors.As(err, &me))
	require.Equal(t, models.ErrTypeInvalidRequest, me.Type)
	require.Equal(t, "invalid field process_guid: must match ^[a-zA-Z0-9_-]+$; invalid field domain: required; invalid field instances: must be >= 0", me.Message)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

func TestPrepareDesiredLRP(t *testing.T) {
	models.PrepareDesiredLRP(nil) // must not panic

	lrp := seedDesiredLRP(t)
	require.Nil(t, lrp.MetricTags)
	models.PrepareDesiredLRP(lrp)
	require.Equal(t, "some-metrics-guid", lrp.MetricTags["source_id"].GetStatic())
	require.Equal(t, modelsv1.UpdateStrategy_UPDATE_STRATEGY_ROLLING, lrp.UpdateStrategy)
	require.Equal(t, "some-log-guid", lrp.LogGuid)
	require.NoError(t, models.ValidateDesiredLRP(lrp))

	before := fullDesiredLRP(t)
	before.MetricTags["source_id"] = &modelsv1.MetricTagValue{Static: "kept"}
	before.MetricsGuid = ""
	after := fullDesiredLRP(t)
	after.MetricTags["source_id"] = &modelsv1.MetricTagValue{Static: "kept"}
	after.MetricsGuid = ""
	models.PrepareDesiredLRP(after)
	models.PrepareDesiredLRP(after)
	require.Equal(t, before.String(), after.String(), "prepare keeps given tags and strategy and is idempotent")

	noGUID := seedDesiredLRP(t)
	noGUID.MetricsGuid = ""
	models.PrepareDesiredLRP(noGUID)
	require.Nil(t, noGUID.MetricTags)
}
