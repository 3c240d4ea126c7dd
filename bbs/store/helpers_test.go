package store_test

import (
	"context"
	"testing"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// secretEnvValue appears only in run info, which must be encrypted at rest.
const secretEnvValue = "s3cr3t-database-password-value"

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newDesiredLRP is a valid DesiredLRP with run info, routes and metric tags.
func newDesiredLRP(guid string, instances int32) *modelsv1.DesiredLRP {
	routes, _ := structpb.NewValue([]any{map[string]any{"hostnames": []any{guid + ".example.com"}, "port": 8080}})
	return &modelsv1.DesiredLRP{
		ProcessGuid: guid,
		Domain:      "cf-apps",
		Instances:   instances,
		Rootfs:      "preloaded:cflinuxfs4",
		MemoryMb:    256,
		DiskMb:      512,
		LogGuid:     "log-" + guid,
		Annotation:  "an annotation",
		Env:         []*modelsv1.EnvironmentVariable{{Name: "DB_PASSWORD", Value: secretEnvValue}},
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
			Path: "/bin/app", Args: []string{"--port", "8080"}, User: "vcap",
		}}},
		Ports:         []uint32{8080},
		Routes:        map[string]*structpb.Value{"cf-router": routes},
		PlacementTags: []string{"blue"},
		MetricTags: map[string]*modelsv1.MetricTagValue{
			"source_id": {Static: "app-" + guid},
			"index":     {Dynamic: modelsv1.MetricTagValue_DYNAMIC_INDEX},
		},
		VolumeMounts: []*modelsv1.VolumeMount{{Driver: "nfs", ContainerDir: "/data", Mode: "rw",
			Shared: &modelsv1.SharedDevice{VolumeId: "vol-1"}}},
	}
}

func instanceKey(guid, cell string) *modelsv1.ActualLRPInstanceKey {
	return &modelsv1.ActualLRPInstanceKey{InstanceGuid: guid, CellId: cell}
}

func netInfo(address string) *modelsv1.ActualLRPNetInfo {
	return &modelsv1.ActualLRPNetInfo{Address: address, InstanceAddress: "10.255.0.2",
		Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
}

// eventTypes lists the type strings of events after a sequence.
func eventTypes(t testing.TB, s *store.Postgres, after uint64) []string {
	t.Helper()
	events, err := s.EventsAfter(testContext(t), after, 0)
	require.NoError(t, err)
	types := make([]string, len(events))
	for i, e := range events {
		types[i] = models.EventType(e)
	}
	return types
}

// latest is the store's newest event sequence.
func latest(t testing.TB, s *store.Postgres) uint64 {
	t.Helper()
	seq, err := s.LatestSequence(testContext(t))
	require.NoError(t, err)
	return seq
}

// requireErrorType checks that err is a *models.Error of the given type.
func requireErrorType(t testing.TB, err error, want models.ErrorType) {
	t.Helper()
	require.Error(t, err)
	got := models.FromError(err)
	require.Equal(t, want, got.Type, "error: %v", err)
}

// desire stores an LRP and fails the test on error.
func desire(t testing.TB, s *store.Postgres, lrp *modelsv1.DesiredLRP) *store.DesiredLRPChange {
	t.Helper()
	change, err := s.DesireLRP(testContext(t), lrp)
	require.NoError(t, err)
	return change
}

func newStoreWithClock(t testing.TB) (*store.Postgres, *storetest.Clock) {
	clock := &storetest.Clock{}
	return storetest.NewStoreWithConfig(t, store.Config{Clock: clock.Now}), clock
}

// requireProtoEqual compares two messages with proto.Equal.
func requireProtoEqual(t testing.TB, want, got proto.Message) {
	t.Helper()
	if !proto.Equal(want, got) {
		t.Fatalf("messages differ:\nwant: %v\ngot:  %v", prototext.Format(want), prototext.Format(got))
	}
}

// requireProtosEqual compares two lists of messages with proto.Equal.
func requireProtosEqual[M proto.Message](t testing.TB, want, got []M) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		requireProtoEqual(t, want[i], got[i])
	}
}
