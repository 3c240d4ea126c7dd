package bench

import (
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Domains used by the scenarios, so that each scenario's rows can be told apart.
const (
	DesireDomain = "bench-desire"
	ListDomain   = "bench-list"
)

// ProcessGuid names the i-th LRP of a scenario, e.g. "bench-desire-000042".
func ProcessGuid(domain string, i int) string { return fmt.Sprintf("%s-%06d", domain, i) }

// NewDesiredLRP returns a DesiredLRP shaped like a buildpack app pushed by Cloud
// Controller: a droplet download, a start command with environment, a TCP health check,
// one cf-router route, egress rules and metric tags.
func NewDesiredLRP(processGuid, domain string, instances int32) *modelsv1.DesiredLRP {
	route := structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
		structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"hostnames": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
				structpb.NewStringValue(processGuid + ".apps.example.com"),
			}}),
			"port": structpb.NewNumberValue(8080),
		}}),
	}})
	return &modelsv1.DesiredLRP{
		ProcessGuid: processGuid,
		Domain:      domain,
		Instances:   instances,
		Rootfs:      "preloaded:cflinuxfs4",
		Env: []*modelsv1.EnvironmentVariable{
			{Name: "LANG", Value: "en_US.UTF-8"},
			{Name: "PORT", Value: "8080"},
			{Name: "VCAP_APPLICATION", Value: fmt.Sprintf(`{"application_id":"%s","application_name":"bench-app","space_name":"bench","limits":{"mem":256,"disk":1024}}`, processGuid)},
			{Name: "VCAP_SERVICES", Value: `{}`},
			{Name: "MEMORY_LIMIT", Value: "256m"},
		},
		CpuWeight: 10,
		DiskMb:    1024,
		MemoryMb:  256,
		MaxPids:   1024,
		Setup: &modelsv1.Action{Action: &modelsv1.Action_Download{Download: &modelsv1.DownloadAction{
			Artifact: "droplet",
			From:     "http://fileserver.internal:8080/v1/static/droplets/" + processGuid + ".tgz",
			To:       "/home/vcap",
			CacheKey: "droplets-" + processGuid,
			User:     "vcap",
		}}},
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
			Path:           "/tmp/lifecycle/launcher",
			Args:           []string{"app", "bundle exec rackup config.ru -p $PORT", ""},
			Dir:            "/home/vcap/app",
			Env:            []*modelsv1.EnvironmentVariable{{Name: "RACK_ENV", Value: "production"}},
			ResourceLimits: &modelsv1.ResourceLimits{Nofile: 16384},
			User:           "vcap",
			LogSource:      "APP/PROC/WEB",
		}}},
		CheckDefinition: &modelsv1.CheckDefinition{
			Checks:    []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: 8080, ConnectTimeoutMs: 1000, IntervalMs: 30000}}},
			LogSource: "HEALTH/PROC/WEB",
		},
		StartTimeout: 60,
		Ports:        []uint32{8080},
		Routes:       map[string]*structpb.Value{"cf-router": route},
		LogGuid:      processGuid,
		LogSource:    "CELL",
		MetricsGuid:  processGuid,
		Annotation:   "bench-app",
		EgressRules: []*modelsv1.EgressRule{
			{Protocol: "tcp", Destinations: []string{"0.0.0.0/0"}, PortRange: &modelsv1.PortRange{Start: 1, End: 65535}},
			{Protocol: "udp", Destinations: []string{"10.0.0.0/8"}, Ports: []uint32{53}},
		},
		MetricTags: map[string]*modelsv1.MetricTagValue{
			"source_id":    {Static: processGuid},
			"instance_id":  {Dynamic: modelsv1.MetricTagValue_DYNAMIC_INDEX},
			"app_name":     {Static: "bench-app"},
			"organization": {Static: "bench-org"},
		},
		LogRateLimit: &modelsv1.LogRateLimit{BytesPerSecond: -1},
	}
}
