package translate

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

func TestCheckRootFS(t *testing.T) {
	providers := []*modelsv1.RootFSProvider{{Name: "preloaded", Properties: []string{"busybox", "cflinuxfs4"}}, {Name: "docker"}}
	tests := []struct {
		rootfs string
		ok     bool
	}{
		{"preloaded:busybox", true},
		{"preloaded:cflinuxfs4", true},
		{"preloaded:nope", false},
		{"docker://nginx:latest", true},
		{"docker:///cloudfoundry/diego", true},
		{"oci://x", false},
		{"busybox", false},
		{"preloaded:", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.rootfs, func(t *testing.T) {
			err := CheckRootFS(tt.rootfs, providers)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestAdmitLRPs(t *testing.T) {
	work := func(pg string, mem int32) *repv1.LRPWork {
		return &repv1.LRPWork{ProcessGuid: pg, Resource: &modelsv1.Resource{MemoryMb: mem}}
	}
	names := func(ws []*repv1.LRPWork) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.GetProcessGuid())
		}
		return out
	}
	tests := []struct {
		name              string
		remaining         int
		lrps              []*repv1.LRPWork
		accepted, refused []string
	}{
		{name: "all fit", remaining: 100, lrps: []*repv1.LRPWork{work("a", 50), work("b", 50)}, accepted: []string{"a", "b"}},
		{name: "biggest first, smaller ones fill the rest", remaining: 100, lrps: []*repv1.LRPWork{work("s", 40), work("b", 70), work("t", 30)}, accepted: []string{"b", "t"}, refused: []string{"s"}},
		{name: "too big for the cell", remaining: 10, lrps: []*repv1.LRPWork{work("x", 11)}, refused: []string{"x"}},
		{name: "nothing left", remaining: 0, lrps: []*repv1.LRPWork{work("x", 1), work("zero", 0)}, accepted: []string{"zero"}, refused: []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accepted, refused := AdmitLRPs(tt.remaining, tt.lrps)
			require.Equal(t, tt.accepted, names(accepted))
			require.Equal(t, tt.refused, names(refused))
		})
	}
}

func TestNewInstanceGuid(t *testing.T) {
	a, b := NewInstanceGuid(), NewInstanceGuid()
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{28}$`), a)
	require.NotEqual(t, a, b)
	require.Equal(t, byte('4'), a[12], "UUID version 4")
}

func TestCPUWeight(t *testing.T) {
	for in, want := range map[uint32]uint32{0: 1, 1: 1, 50: 50, 100: 100, 1000: 100} {
		require.Equal(t, want, CPUWeight(in), "weight %d", in)
	}
}

func TestNetInfo(t *testing.T) {
	got := NetInfo(executor.NetInfo{ExternalIP: "10.0.0.5", InternalIP: "10.88.1.2", Ports: []executor.PortMapping{{ContainerPort: 8080, HostPort: 61000}, {ContainerPort: 2222, HostPort: 61001}}})
	require.Equal(t, "10.0.0.5", got.GetAddress())
	require.Equal(t, "10.88.1.2", got.GetInstanceAddress())
	require.Equal(t, modelsv1.PreferredAddress_PREFERRED_ADDRESS_HOST, got.GetPreferredAddress())
	require.Len(t, got.GetPorts(), 2)
	require.Equal(t, uint32(61001), got.GetPorts()[1].GetHostPort())
}

func TestLRPKeys(t *testing.T) {
	c := executor.Container{Guid: "ig", Tags: map[string]string{executor.TagProcessGuid: "pg", executor.TagProcessIndex: "3", executor.TagDomain: "d"}}
	key, instance, err := LRPKeys(c, "cell-1")
	require.NoError(t, err)
	require.Equal(t, "pg", key.GetProcessGuid())
	require.Equal(t, int32(3), key.GetIndex())
	require.Equal(t, "d", key.GetDomain())
	require.Equal(t, "ig", instance.GetInstanceGuid(), "falls back to the container guid")
	require.Equal(t, "cell-1", instance.GetCellId())

	for _, tags := range []map[string]string{
		{executor.TagProcessIndex: "0"},
		{executor.TagProcessGuid: "pg", executor.TagProcessIndex: "-1"},
		{executor.TagProcessGuid: "pg"},
	} {
		_, _, err := LRPKeys(executor.Container{Guid: "x", Tags: tags}, "cell-1")
		require.Error(t, err)
	}
}

func TestRunRequestsCarryImageCredentialsAndLayers(t *testing.T) {
	layers := []*modelsv1.ImageLayer{{Name: "extra", Url: "http://fs/extra.tgz", DestinationPath: "/opt",
		LayerType: modelsv1.ImageLayer_LAYER_TYPE_SHARED, MediaType: modelsv1.ImageLayer_MEDIA_TYPE_TGZ,
		DigestAlgorithm: "sha256", DigestValue: "abc"}}
	lrp := &modelsv1.DesiredLRP{ProcessGuid: "pg", Rootfs: "docker://r.local/app#v1",
		ImageUsername: "user", ImagePassword: "secret", ImageLayers: layers}
	ri := LRPRunRequest("g", 0, lrp).RunInfo
	require.Equal(t, "user", ri.ImageUsername)
	require.Equal(t, "secret", ri.ImagePassword)
	require.Equal(t, layers, ri.ImageLayers)

	task := &modelsv1.Task{TaskGuid: "t", TaskDefinition: &modelsv1.TaskDefinition{Rootfs: "docker://r.local/app#v1",
		ImageUsername: "tuser", ImagePassword: "tsecret", ImageLayers: layers}}
	ri = TaskRunRequest(task).RunInfo
	require.Equal(t, "tuser", ri.ImageUsername)
	require.Equal(t, "tsecret", ri.ImagePassword)
	require.Equal(t, layers, ri.ImageLayers)
}
