package store_test

import (
	"testing"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestDesireLRP(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	lrp := newDesiredLRP("app-1", 3)

	change, err := s.DesireLRP(ctx, lrp)
	require.NoError(t, err)
	require.Nil(t, change.Before)
	require.NotEmpty(t, change.After.GetModificationTag().GetEpoch())
	require.Zero(t, change.After.GetModificationTag().GetIndex())
	require.NotZero(t, change.After.GetCreatedAt())
	require.Nil(t, lrp.ModificationTag, "the caller's message must not be changed")
	require.Len(t, change.Created, 3)
	epochs := map[string]bool{}
	for i, a := range change.Created {
		require.Equal(t, int32(i), a.Index)
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, a.State)
		require.Equal(t, modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY, a.Presence)
		require.Equal(t, "cf-apps", a.Domain)
		require.NotZero(t, a.Since)
		require.NoError(t, models.ValidateActualLRP(a))
		epochs[a.GetModificationTag().GetEpoch()] = true
	}
	require.Len(t, epochs, 3, "every row gets its own epoch")

	got, err := s.GetDesiredLRP(ctx, "app-1")
	require.NoError(t, err)
	requireProtoEqual(t, change.After, got)

	lrps, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{ProcessGuid: "app-1"})
	require.NoError(t, err)
	requireProtosEqual(t, change.Created, lrps)

	require.Equal(t, []string{
		models.EventTypeDesiredLRPCreated,
		models.EventTypeActualLRPInstanceCreated,
		models.EventTypeActualLRPInstanceCreated,
		models.EventTypeActualLRPInstanceCreated,
	}, eventTypes(t, s, 0))

	_, err = s.DesireLRP(ctx, newDesiredLRP("app-1", 1))
	requireErrorType(t, err, models.ErrTypeResourceExists)
	require.Len(t, eventTypes(t, s, 0), 4, "a refused desire emits nothing")

	_, err = s.DesireLRP(ctx, nil)
	requireErrorType(t, err, models.ErrTypeInvalidRequest)
}

func TestDesireLRPWithZeroInstances(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	change := desire(t, s, newDesiredLRP("idle", 0))
	require.Empty(t, change.Created)
	require.Equal(t, []string{models.EventTypeDesiredLRPCreated}, eventTypes(t, s, 0))
}

func TestListDesiredLRPViews(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	a := desire(t, s, newDesiredLRP("a", 1)).After
	b := desire(t, s, newDesiredLRP("b", 2)).After
	other := newDesiredLRP("c", 1)
	other.Domain = "other"
	c := desire(t, s, other).After

	tests := []struct {
		name   string
		filter store.DesiredLRPFilter
		want   []*modelsv1.DesiredLRP
	}{
		{"all", store.DesiredLRPFilter{}, []*modelsv1.DesiredLRP{a, b, c}},
		{"by domain", store.DesiredLRPFilter{Domain: "cf-apps"}, []*modelsv1.DesiredLRP{a, b}},
		{"by guids", store.DesiredLRPFilter{ProcessGuids: []string{"c", "a", "zzz"}}, []*modelsv1.DesiredLRP{a, c}},
		{"domain and guids", store.DesiredLRPFilter{Domain: "other", ProcessGuids: []string{"a"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lrps, err := s.ListDesiredLRPs(ctx, tt.filter)
			require.NoError(t, err)
			requireProtosEqual(t, tt.want, lrps)

			infos, err := s.ListSchedulingInfos(ctx, tt.filter)
			require.NoError(t, err)
			var wantInfos []*modelsv1.DesiredLRPSchedulingInfo
			for _, l := range tt.want {
				wantInfos = append(wantInfos, models.SchedulingInfo(l))
			}
			requireProtosEqual(t, wantInfos, infos)
		})
	}

	routing, err := s.ListRoutingInfos(ctx, nil)
	require.NoError(t, err)
	require.Len(t, routing, 3)
	requireProtoEqual(t, models.RoutingInfo(b), routing[1])
	routing, err = s.ListRoutingInfos(ctx, []string{"c"})
	require.NoError(t, err)
	require.Len(t, routing, 1)
	require.Equal(t, "c", routing[0].ProcessGuid)

	_, err = s.GetDesiredLRP(ctx, "missing")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
}

func TestUpdateDesiredLRP(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	desired := desire(t, s, newDesiredLRP("app", 4)).After

	// Place index 2 (CLAIMED) and 3 (RUNNING); crash nothing; 0 and 1 stay UNCLAIMED.
	_, err := s.ClaimActualLRP(ctx, "app", 2, instanceKey("i-2", "cell-a"))
	require.NoError(t, err)
	key3 := &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: 3, Domain: "cf-apps"}
	_, err = s.StartActualLRP(ctx, key3, instanceKey("i-3", "cell-b"), netInfo("1.2.3.4"), store.StartOptions{Routable: true})
	require.NoError(t, err)

	t.Run("scale up creates rows for the new indices", func(t *testing.T) {
		seq := latest(t, s)
		six := int32(6)
		change, err := s.UpdateDesiredLRP(ctx, "app", &modelsv1.DesiredLRPUpdate{Instances: &six})
		require.NoError(t, err)
		require.Equal(t, int32(4), change.Before.Instances)
		require.Equal(t, int32(6), change.After.Instances)
		require.Equal(t, desired.ModificationTag.Index+1, change.After.ModificationTag.Index)
		require.Len(t, change.Created, 2)
		require.Equal(t, []int32{4, 5}, []int32{change.Created[0].Index, change.Created[1].Index})
		require.Empty(t, change.ToStop)
		require.Equal(t, []string{models.EventTypeDesiredLRPChanged,
			models.EventTypeActualLRPInstanceCreated, models.EventTypeActualLRPInstanceCreated}, eventTypes(t, s, seq))
	})

	t.Run("scale down deletes unplaced extras and returns placed ones", func(t *testing.T) {
		seq := latest(t, s)
		one := int32(1)
		change, err := s.UpdateDesiredLRP(ctx, "app", &modelsv1.DesiredLRPUpdate{Instances: &one})
		require.NoError(t, err)
		require.Empty(t, change.Created)
		require.Len(t, change.ToStop, 2)
		require.Equal(t, int32(2), change.ToStop[0].Index)
		require.Equal(t, "i-2", change.ToStop[0].InstanceGuid)
		require.Equal(t, int32(3), change.ToStop[1].Index)
		lrps, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{ProcessGuid: "app"})
		require.NoError(t, err)
		var indices []int32
		for _, a := range lrps {
			indices = append(indices, a.Index)
		}
		require.Equal(t, []int32{0, 2, 3}, indices, "placed extras stay until their rep stops them")
		require.Equal(t, []string{models.EventTypeDesiredLRPChanged,
			models.EventTypeActualLRPInstanceRemoved, models.EventTypeActualLRPInstanceRemoved,
			models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))
	})

	t.Run("routes, annotation and metric tags", func(t *testing.T) {
		annotation := "new annotation"
		route, err := structpb.NewValue(map[string]any{"api": "x"})
		require.NoError(t, err)
		change, err := s.UpdateDesiredLRP(ctx, "app", &modelsv1.DesiredLRPUpdate{
			Annotation: &annotation,
			Routes:     map[string]*structpb.Value{"tcp-router": route},
			MetricTags: map[string]*modelsv1.MetricTagValue{"team": {Static: "blue"}},
		})
		require.NoError(t, err)
		got, err := s.GetDesiredLRP(ctx, "app")
		require.NoError(t, err)
		requireProtoEqual(t, change.After, got)
		require.Equal(t, "new annotation", got.Annotation)
		require.Contains(t, got.Routes, "tcp-router")
		require.NotContains(t, got.Routes, "cf-router")
		require.Equal(t, "blue", got.MetricTags["team"].GetStatic())
		require.Equal(t, secretEnvValue, got.Env[0].Value, "run info survives an update")
		routing, err := s.ListRoutingInfos(ctx, []string{"app"})
		require.NoError(t, err)
		require.Equal(t, "blue", routing[0].MetricTags["team"].GetStatic())

		events, err := s.EventsAfter(ctx, latest(t, s)-1, 1)
		require.NoError(t, err)
		changed := events[0].GetDesiredLrpChanged()
		require.True(t, proto.Equal(change.Before, changed.Before))
		require.True(t, proto.Equal(change.After, changed.After))
	})

	t.Run("missing and nil", func(t *testing.T) {
		_, err := s.UpdateDesiredLRP(ctx, "missing", &modelsv1.DesiredLRPUpdate{})
		requireErrorType(t, err, models.ErrTypeResourceNotFound)
		_, err = s.UpdateDesiredLRP(ctx, "app", nil)
		requireErrorType(t, err, models.ErrTypeInvalidRequest)
	})
}

func TestRemoveDesiredLRP(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("app", 3))
	desire(t, s, newDesiredLRP("other", 1))
	_, err := s.ClaimActualLRP(ctx, "app", 1, instanceKey("i-1", "cell-a"))
	require.NoError(t, err)
	seq := latest(t, s)

	change, err := s.RemoveDesiredLRP(ctx, "app")
	require.NoError(t, err)
	require.Equal(t, "app", change.Before.ProcessGuid)
	require.Nil(t, change.After)
	require.Len(t, change.ToStop, 1)
	require.Equal(t, int32(1), change.ToStop[0].Index)

	_, err = s.GetDesiredLRP(ctx, "app")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	lrps, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{ProcessGuid: "app"})
	require.NoError(t, err)
	require.Len(t, lrps, 1)
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED, lrps[0].State)
	others, err := s.ListActualLRPs(ctx, store.ActualLRPFilter{ProcessGuid: "other"})
	require.NoError(t, err)
	require.Len(t, others, 1, "other LRPs are untouched")

	require.Equal(t, []string{models.EventTypeDesiredLRPRemoved,
		models.EventTypeActualLRPInstanceRemoved, models.EventTypeActualLRPInstanceRemoved}, eventTypes(t, s, seq))

	_, err = s.RemoveDesiredLRP(ctx, "app")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)

	// Re-desiring while the placed row is still stopping keeps that row.
	change2 := desire(t, s, newDesiredLRP("app", 3))
	require.Len(t, change2.Created, 2)
	require.Equal(t, []int32{0, 2}, []int32{change2.Created[0].Index, change2.Created[1].Index})
}
