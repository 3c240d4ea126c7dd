package models_test

import (
	"testing"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// requireAllFieldsSet fails unless every field of m is populated, so that a test
// on m covers every field the message has, including fields added later.
func requireAllFieldsSet(t *testing.T, m proto.Message) {
	t.Helper()
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		require.Truef(t, r.Has(fd), "fixture leaves %s unset", fd.Name())
	}
}

func TestViewsRoundTrip(t *testing.T) {
	lrp := fullDesiredLRP(t)
	requireAllFieldsSet(t, lrp)
	original := proto.CloneOf(lrp)

	si, ri := models.SchedulingInfo(lrp), models.RunInfo(lrp)
	requireAllFieldsSet(t, si)
	requireAllFieldsSet(t, ri)
	joined := models.DesiredLRPFromViews(si, ri)
	require.True(t, proto.Equal(lrp, joined), "round trip lost data:\n%v\n%v", lrp, joined)

	// The views share no memory with the LRP.
	si.Routes["cf-router"] = structpb.NewNullValue()
	si.ModificationTag.Index = 99
	ri.Action.GetRun().Path = "/changed"
	ri.Env[0].Name = "CHANGED"
	require.True(t, proto.Equal(original, lrp))
	joined.MetricTags["source_id"].Static = "changed"
	require.True(t, proto.Equal(original, lrp))
}

func TestSchedulingInfoContent(t *testing.T) {
	lrp := fullDesiredLRP(t)
	si := models.SchedulingInfo(lrp)
	require.Equal(t, []string{"nfs", "local"}, si.GetVolumeDrivers())
	require.Equal(t, &modelsv1.Resource{MemoryMb: 128, DiskMb: 1024, MaxPids: 1024}, si.GetResource())
	require.Equal(t, modelsv1.UpdateStrategy_UPDATE_STRATEGY_RECREATE, si.GetUpdateStrategy())

	ri := models.RoutingInfo(lrp)
	requireAllFieldsSet(t, ri)
	require.Equal(t, "some-guid", ri.GetProcessGuid())
	require.Equal(t, int32(17), ri.GetInstances())
	require.True(t, proto.Equal(lrp.Routes["cf-router"], ri.Routes["cf-router"]))
	ri.MetricTags["source_id"].Static = "changed"
	require.Equal(t, "some-metrics-guid", lrp.MetricTags["source_id"].Static)
}

func TestViewsOfNil(t *testing.T) {
	require.Nil(t, models.SchedulingInfo(nil))
	require.Nil(t, models.RunInfo(nil))
	require.Nil(t, models.RoutingInfo(nil))
	require.Nil(t, models.DesiredLRPFromViews(nil, nil))
	require.Nil(t, models.ApplyDesiredLRPUpdate(nil, &modelsv1.DesiredLRPUpdate{}))
	require.Nil(t, models.LRPStartRequest(nil, []int32{1}))
	require.Nil(t, models.TaskStartRequest(nil))

	onlySI := models.DesiredLRPFromViews(models.SchedulingInfo(fullDesiredLRP(t)), nil)
	require.Equal(t, "some-guid", onlySI.GetProcessGuid())
	require.Nil(t, onlySI.GetAction())
	onlyRI := models.DesiredLRPFromViews(nil, models.RunInfo(fullDesiredLRP(t)))
	require.Equal(t, "some-domain", onlyRI.GetDomain())
}

func TestApplyDesiredLRPUpdate(t *testing.T) {
	newRoutes := map[string]*structpb.Value{"cf-router": structpb.NewStringValue("new")}
	newTags := map[string]*modelsv1.MetricTagValue{"app": {Static: "a"}}
	cases := []struct {
		name   string
		update *modelsv1.DesiredLRPUpdate
		check  func(t *testing.T, before, after *modelsv1.DesiredLRP)
	}{
		{"nil update only bumps", nil, func(t *testing.T, before, after *modelsv1.DesiredLRP) {
			before.ModificationTag.Index++
			require.True(t, proto.Equal(before, after))
		}},
		{"empty update keeps everything", &modelsv1.DesiredLRPUpdate{}, func(t *testing.T, before, after *modelsv1.DesiredLRP) {
			before.ModificationTag.Index++
			require.True(t, proto.Equal(before, after))
		}},
		{"optional fields", &modelsv1.DesiredLRPUpdate{
			Instances: proto.Int32(0), Annotation: proto.String(""), ImageUsername: proto.String("u2"), ImagePassword: proto.String("p2"),
		}, func(t *testing.T, before, after *modelsv1.DesiredLRP) {
			require.Equal(t, int32(0), after.Instances)
			require.Empty(t, after.Annotation)
			require.Equal(t, "u2", after.ImageUsername)
			require.Equal(t, "p2", after.ImagePassword)
			require.True(t, proto.Equal(&modelsv1.DesiredLRP{Routes: before.Routes}, &modelsv1.DesiredLRP{Routes: after.Routes}))
		}},
		{"allow_ssh switched off and nothing else", &modelsv1.DesiredLRPUpdate{AllowSsh: proto.Bool(false)}, func(t *testing.T, before, after *modelsv1.DesiredLRP) {
			require.True(t, before.AllowSsh)
			require.False(t, after.AllowSsh)
			before.ModificationTag.Index++
			before.AllowSsh = false
			require.True(t, proto.Equal(before, after))
		}},
		{"routes replaced", &modelsv1.DesiredLRPUpdate{Routes: newRoutes}, func(t *testing.T, _, after *modelsv1.DesiredLRP) {
			require.Len(t, after.Routes, 1)
			require.Equal(t, "new", after.Routes["cf-router"].GetStringValue())
		}},
		{"routes cleared", &modelsv1.DesiredLRPUpdate{ClearRoutes: true}, func(t *testing.T, _, after *modelsv1.DesiredLRP) {
			require.Empty(t, after.Routes)
		}},
		{"metric tags replaced, source id re-derived", &modelsv1.DesiredLRPUpdate{MetricTags: newTags}, func(t *testing.T, _, after *modelsv1.DesiredLRP) {
			require.Len(t, after.MetricTags, 2)
			require.Equal(t, "a", after.MetricTags["app"].GetStatic())
			require.Equal(t, "some-metrics-guid", after.MetricTags["source_id"].GetStatic())
			require.NoError(t, models.ValidateDesiredLRP(after))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lrp := fullDesiredLRP(t)
			before := proto.CloneOf(lrp)
			after := models.ApplyDesiredLRPUpdate(lrp, tc.update)
			require.True(t, proto.Equal(before, lrp), "the input is not modified")
			require.Equal(t, before.ModificationTag.Index+1, after.ModificationTag.Index)
			require.Equal(t, before.ModificationTag.Epoch, after.ModificationTag.Epoch)
			tc.check(t, before, after)
		})
	}
	require.Len(t, newTags, 1, "the update's map is not modified")

	noTag := &modelsv1.DesiredLRP{ProcessGuid: "pg"}
	require.Equal(t, uint32(1), models.ApplyDesiredLRPUpdate(noTag, nil).GetModificationTag().GetIndex())
}

func TestStartRequests(t *testing.T) {
	lrp := fullDesiredLRP(t)
	indices := []int32{0, 3}
	req := models.LRPStartRequest(models.SchedulingInfo(lrp), indices)
	require.True(t, proto.Equal(&modelsv1.LRPStartRequest{
		ProcessGuid: "some-guid", Domain: "some-domain", Indices: []int32{0, 3},
		Resource: &modelsv1.Resource{MemoryMb: 128, DiskMb: 1024, MaxPids: 1024},
		Rootfs:   "preloaded:cflinuxfs4", PlacementTags: []string{"zone-a"}, VolumeDrivers: []string{"nfs", "local"},
	}, req), "%v", req)
	indices[0] = 9
	require.Equal(t, int32(0), req.Indices[0])

	def := validTaskDefinition()
	def.MaxPids = 7
	def.PlacementTags = []string{"gpu"}
	def.VolumeMounts = []*modelsv1.VolumeMount{{Driver: "smb"}}
	treq := models.TaskStartRequest(&modelsv1.Task{TaskGuid: "tg", Domain: "d", TaskDefinition: def})
	require.True(t, proto.Equal(&modelsv1.TaskStartRequest{
		TaskGuid: "tg", Domain: "d", Resource: &modelsv1.Resource{MemoryMb: 64, DiskMb: 64, MaxPids: 7},
		Rootfs: "docker:///busybox", PlacementTags: []string{"gpu"}, VolumeDrivers: []string{"smb"},
	}, treq), "%v", treq)
	require.Equal(t, "tg", models.TaskStartRequest(&modelsv1.Task{TaskGuid: "tg"}).GetTaskGuid())
}
