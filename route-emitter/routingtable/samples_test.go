package routingtable

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestMessagesMatchGorouterSamples builds each message through the table and compares
// it field by field with the fixed samples of gorouter's JSON in testdata/ (acceptance 4).
func TestMessagesMatchGorouterSamples(t *testing.T) {
	const iguid = "8d2e3b5a-0b8f-4a56-6c2d-1f3e"
	netInfo := func(host string, port, tlsPort uint32) *modelsv1.ActualLRPNetInfo {
		return &modelsv1.ActualLRPNetInfo{Address: host, Ports: []*modelsv1.PortMapping{
			{ContainerPort: 8080, HostPort: port, ContainerTlsProxyPort: 61443, HostTlsProxyPort: tlsPort}}}
	}
	cases := []struct {
		sample   string
		routes   []any
		desired  func(d *modelsv1.DesiredLRP)
		actual   *modelsv1.ActualLRP
		register bool
	}{
		{
			sample: "register_full.json",
			routes: []any{map[string]any{"hostnames": []any{"dora.example.com"}, "port": float64(8080),
				"route_service_url": "https://route-service.example.com", "isolation_segment": "iso-seg-1",
				"protocol": "http2", "options": map[string]any{"loadbalancing": "least-connection"}}},
			desired: func(d *modelsv1.DesiredLRP) {
				d.LogGuid = "5a7c4f31-1e6b-4f3a-9a36-0f4f6b5f8c11"
				d.MetricTags = map[string]*modelsv1.MetricTagValue{
					"source_id":         {Static: "5a7c4f31-1e6b-4f3a-9a36-0f4f6b5f8c11"},
					"instance_id":       {Dynamic: modelsv1.MetricTagValue_DYNAMIC_INDEX},
					"organization_name": {Static: "org"},
				}
			},
			actual: &modelsv1.ActualLRP{ProcessGuid: "p", Index: 2, InstanceGuid: iguid, State: running, Routable: true,
				Presence: ordinary, Since: 1700000000123456789, AvailabilityZone: "z1", NetInfo: netInfo("10.0.16.4", 61001, 0)},
			register: true,
		},
		{
			sample: "unregister_minimal.json",
			routes: []any{map[string]any{"hostnames": []any{"dora.example.com"}, "port": float64(8080)}},
			actual: &modelsv1.ActualLRP{ProcessGuid: "p", Index: 0, InstanceGuid: iguid, State: running, Routable: true,
				Presence: ordinary, Since: 5, NetInfo: netInfo("10.0.16.4", 61001, 0)},
		},
		{
			sample:  "register_tls.json",
			routes:  []any{map[string]any{"hostnames": []any{"secure.example.com/path"}, "port": float64(8080)}},
			desired: func(d *modelsv1.DesiredLRP) { d.LogGuid = "log-guid-1" },
			actual: &modelsv1.ActualLRP{ProcessGuid: "p", Index: 1, InstanceGuid: "instance-guid-1", State: running, Routable: true,
				Presence: ordinary, Since: 1700000000000000001, NetInfo: netInfo("10.0.16.4", 61001, 61002)},
			register: true,
		},
	}
	for _, c := range cases {
		t.Run(c.sample, func(t *testing.T) {
			routes, err := structpb.NewValue(c.routes)
			require.NoError(t, err)
			d := &modelsv1.DesiredLRP{ProcessGuid: "p", Domain: "cf-apps", Instances: 3,
				Routes: map[string]*structpb.Value{CFRouterKey: routes}}
			if c.desired != nil {
				c.desired(d)
			}
			table := New()
			_, err = table.ApplyEvent(ev(d))
			require.NoError(t, err)
			msgs, err := table.ApplyEvent(ev(c.actual))
			require.NoError(t, err)
			require.Len(t, msgs.Registrations, 1)
			got := msgs.Registrations[0]
			if !c.register {
				msgs, err = table.ApplyEvent(actualRemoved(c.actual))
				require.NoError(t, err)
				require.Len(t, msgs.Unregistrations, 1)
				got = msgs.Unregistrations[0]
			}
			gotJSON, err := json.Marshal(got)
			require.NoError(t, err)

			want := decodeFields(t, mustRead(t, filepath.Join("testdata", c.sample)))
			have := decodeFields(t, gotJSON)
			for field, value := range want {
				assert.JSONEq(t, string(value), string(have[field]), "field %s", field)
			}
			for field := range have {
				assert.Contains(t, want, field, "field %s is not in the sample", field)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func decodeFields(t *testing.T, data []byte) map[string]json.RawMessage {
	t.Helper()
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &fields))
	return fields
}
