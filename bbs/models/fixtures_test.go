package models_test

import (
	"testing"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// seedDesiredLRPJSON is the DesiredLRPCreateRequest of the LRP API seed document,
// with the placeholders (rootfs, actions, start_timeout) filled in.
const seedDesiredLRPJSON = `{
    "process_guid": "some-guid",
    "domain": "some-domain",
    "instances": 17,
    "rootfs": "preloaded:cflinuxfs4",
    "env": [
        {"name": "ENV_NAME_A", "value": "ENV_VALUE_A"},
        {"name": "ENV_NAME_B", "value": "ENV_VALUE_B"}
    ],
    "cpu_weight": 57,
    "disk_mb": 1024,
    "memory_mb": 128,
    "privileged": true,
    "setup": {"download": {"from": "http://file-server/lifecycle.tgz", "to": "/tmp/lifecycle", "user": "vcap"}},
    "action": {"run": {"path": "/tmp/lifecycle/launcher", "args": ["app"], "user": "vcap"}},
    "monitor": {"run": {"path": "/tmp/lifecycle/healthcheck", "args": ["-port=8080"], "user": "vcap"}},
    "start_timeout": 60,
    "ports": [8080, 5050],
    "routes": {
        "cf-router": [
            {"hostnames": ["a.example.com", "b.example.com"], "port": 8080},
            {"hostnames": ["c.example.com"], "port": 5050}
        ],
        "identifier-for-your-own-router-type": "any opaque json payload"
    },
    "log_guid": "some-log-guid",
    "log_source": "some-log-source",
    "metrics_guid": "some-metrics-guid",
    "annotation": "arbitrary metadata",
    "egress_rules": [
        {"protocol": "tcp", "destinations": ["0.0.0.0/0"], "port_range": {"start": 1, "end": 1024}},
        {"protocol": "all", "destinations": ["1.2.3.4"], "log": true},
        {"protocol": "tcp", "destinations": ["1.2.3.4-2.3.4.5"], "ports": [80, 443], "log": true},
        {"protocol": "udp", "destinations": ["1.2.3.4/4"], "port_range": {"start": 8000, "end": 8085}},
        {"protocol": "icmp", "destinations": ["1.2.3.4", "2.3.4.5/6"], "icmp_info": {"type": 1, "code": 40}}
    ]
}`

// seedDesiredLRP decodes seedDesiredLRPJSON.
func seedDesiredLRP(t testing.TB) *modelsv1.DesiredLRP {
	t.Helper()
	lrp := &modelsv1.DesiredLRP{}
	require.NoError(t, protojson.Unmarshal([]byte(seedDesiredLRPJSON), lrp))
	return lrp
}

// runAction is a valid run action.
func runAction(path string) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: path, User: "vcap"}}}
}

// fullDesiredLRP sets every field of a DesiredLRP to a valid, non-default value.
func fullDesiredLRP(t testing.TB) *modelsv1.DesiredLRP {
	t.Helper()
	lrp := seedDesiredLRP(t)
	route, err := structpb.NewValue(map[string]any{"port": 8080.0})
	require.NoError(t, err)
	lrp.Routes["tcp-router"] = route
	lrp.ModificationTag = &modelsv1.ModificationTag{Epoch: "epoch-1", Index: 4}
	lrp.MaxPids = 1024
	lrp.PlacementTags = []string{"zone-a"}
	lrp.CheckDefinition = &modelsv1.CheckDefinition{
		Checks:          []*modelsv1.Check{{HttpCheck: &modelsv1.HTTPCheck{Port: 8080, Path: "/health"}}},
		ReadinessChecks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: 8080}}},
		LogSource:       "HEALTH",
	}
	lrp.CachedDependencies = []*modelsv1.CachedDependency{{
		Name: "buildpack", From: "http://file-server/bp.zip", To: "/tmp/bp", CacheKey: "bp",
		ChecksumAlgorithm: "sha256", ChecksumValue: "abc",
	}}
	lrp.TrustedSystemCertificatesPath = "/etc/cf-system-certificates"
	lrp.VolumeMounts = []*modelsv1.VolumeMount{
		{Driver: "nfs", ContainerDir: "/data", Mode: "rw", Shared: &modelsv1.SharedDevice{VolumeId: "vol-1"}},
		{Driver: "local", ContainerDir: "/scratch", Mode: "r", Dedicated: &modelsv1.DedicatedDevice{MounterId: "m-1"}},
	}
	lrp.VolumeMountedFiles = []*modelsv1.File{{Path: "/etc/config", Content: "key=value"}}
	lrp.Network = &modelsv1.Network{Properties: map[string]string{"policy_group_id": "g"}}
	lrp.ImageLayers = []*modelsv1.ImageLayer{{
		Name: "droplet", Url: "http://file-server/droplet.tgz", DestinationPath: "/home/vcap",
		LayerType: modelsv1.ImageLayer_LAYER_TYPE_EXCLUSIVE, MediaType: modelsv1.ImageLayer_MEDIA_TYPE_TGZ,
		DigestAlgorithm: "sha256", DigestValue: "def",
	}}
	lrp.ImageUsername = "user"
	lrp.ImagePassword = "secret"
	lrp.LegacyDownloadUser = "vcap"
	lrp.MetricTags = map[string]*modelsv1.MetricTagValue{
		"source_id":     {Static: "some-metrics-guid"},
		"instance_guid": {Dynamic: modelsv1.MetricTagValue_DYNAMIC_INSTANCE_GUID},
	}
	lrp.Sidecars = []*modelsv1.Sidecar{{Action: runAction("/sidecar"), DiskMb: 10, MemoryMb: 20}}
	lrp.LogRateLimit = &modelsv1.LogRateLimit{BytesPerSecond: 4096}
	lrp.CertificateProperties = &modelsv1.CertificateProperties{OrganizationalUnit: []string{"app:some-guid"}}
	lrp.UpdateStrategy = modelsv1.UpdateStrategy_UPDATE_STRATEGY_RECREATE
	lrp.CreatedAt = 1700000000000000000
	lrp.AllowSsh = true
	return lrp
}

// validTaskDefinition is a small valid task definition.
func validTaskDefinition() *modelsv1.TaskDefinition {
	return &modelsv1.TaskDefinition{
		Rootfs:   "docker:///busybox",
		Action:   runAction("/bin/true"),
		MemoryMb: 64,
		DiskMb:   64,
	}
}

// validCellPresence is a valid cell presence.
func validCellPresence() *modelsv1.CellPresence {
	return &modelsv1.CellPresence{
		CellId:     "cell-1",
		RepAddress: "10.0.0.1:1800",
		RepUrl:     "https://cell-1.cell.service.cf.internal:1801",
		Capacity:   &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 2048, Containers: 100},
	}
}
