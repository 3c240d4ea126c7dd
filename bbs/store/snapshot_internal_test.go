package store

import (
	"testing"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestCallbackURL(t *testing.T) {
	marshal := func(def *modelsv1.TaskDefinition) []byte {
		b, err := proto.Marshal(def)
		require.NoError(t, err)
		return b
	}
	full := &modelsv1.TaskDefinition{
		Rootfs:                "preloaded:cflinuxfs4",
		Env:                   []*modelsv1.EnvironmentVariable{{Name: "A", Value: "B"}},
		MemoryMb:              64,
		Privileged:            true,
		MetricTags:            map[string]*modelsv1.MetricTagValue{"x": {Static: "y"}},
		CompletionCallbackUrl: "https://cc.example.com/tasks/1",
		Annotation:            "after the url",
	}
	twice := append(marshal(&modelsv1.TaskDefinition{CompletionCallbackUrl: "first"}),
		marshal(&modelsv1.TaskDefinition{CompletionCallbackUrl: "second"})...)
	cases := []struct {
		name    string
		def     []byte
		want    string
		wantErr bool
	}{
		{"empty definition", nil, "", false},
		{"no callback", marshal(&modelsv1.TaskDefinition{Rootfs: "r", MemoryMb: 1}), "", false},
		{"callback among other fields", marshal(full), "https://cc.example.com/tasks/1", false},
		{"last occurrence wins", twice, "second", false},
		{"truncated callback", marshal(full)[:len(marshal(full))-20], "", true},
		{"bad tag", []byte{0xff}, "", true},
		{"callback of the wrong wire type", protowire.AppendVarint(protowire.AppendTag(nil, callbackURLField, protowire.VarintType), 7), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := callbackURL(tc.def)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
