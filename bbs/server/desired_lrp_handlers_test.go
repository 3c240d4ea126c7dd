package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestDesiredLRPService(t *testing.T) {
	h := newHarness(t)

	t.Run("desire stores the LRP, its UNCLAIMED instances and asks for indices 0..N-1", func(t *testing.T) {
		h.desire("web", 3)

		got, err := h.client.GetDesiredLRP(h.ctx(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: "web"})
		require.NoError(t, err)
		want := desiredLRP("web", 3)
		require.Equal(t, want.GetAction().GetRun().GetPath(), got.GetDesiredLrp().GetAction().GetRun().GetPath())
		require.Equal(t, int32(3), got.GetDesiredLrp().GetInstances())
		require.Equal(t, "annotated", got.GetDesiredLrp().GetAnnotation())

		rows, _ := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{ProcessGuid: "web"})
		require.Equal(t, []int32{0, 1, 2}, indicesOf(rows))
		for _, r := range rows {
			require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, r.GetState())
		}
		h.eventually(func() bool { return len(h.auctioneer.lrpIndices("web")) == 3 }, "auction requested")
		require.ElementsMatch(t, []int32{0, 1, 2}, h.auctioneer.lrpIndices("web"))
	})

	t.Run("refusals change nothing", func(t *testing.T) {
		invalid := desiredLRP("bad guid!", 2)
		noAction := desiredLRP("no-action", 2)
		noAction.Action = nil
		cases := []struct {
			name  string
			req   *bbsv1.DesireLRPRequest
			code  codes.Code
			field string
		}{
			{"invalid process guid", &bbsv1.DesireLRPRequest{DesiredLrp: invalid}, codes.InvalidArgument, "process_guid"},
			{"missing action", &bbsv1.DesireLRPRequest{DesiredLrp: noAction}, codes.InvalidArgument, "action"},
			{"missing desired lrp", &bbsv1.DesireLRPRequest{}, codes.InvalidArgument, "desired_lrp"},
			{"duplicate guid", &bbsv1.DesireLRPRequest{DesiredLrp: desiredLRP("web", 5)}, codes.AlreadyExists, ""},
		}
		seqBefore, err := h.db.LatestSequence(h.ctx())
		require.NoError(t, err)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := h.client.DesireLRP(h.ctx(), tc.req)
				requireCode(t, err, tc.code)
				require.Contains(t, status.Convert(err).Message(), tc.field)
			})
		}
		seqAfter, err := h.db.LatestSequence(h.ctx())
		require.NoError(t, err)
		require.Equal(t, seqBefore, seqAfter, "no events appended")
		list, err := h.client.ListDesiredLRPs(h.ctx(), &bbsv1.ListDesiredLRPsRequest{})
		require.NoError(t, err)
		require.Len(t, list.GetDesiredLrps(), 1)
		rows, _ := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{})
		require.Len(t, rows, 3)
		require.Len(t, h.auctioneer.lrpIndices("web"), 3)
		require.Empty(t, h.auctioneer.lrpIndices("bad guid!"))
	})

	t.Run("the error type survives the hop", func(t *testing.T) {
		_, err := h.client.GetDesiredLRP(h.ctx(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: "missing"})
		requireCode(t, err, codes.NotFound)
		require.ErrorIs(t, models.FromError(err), models.ErrResourceNotFound)
	})

	t.Run("scale up auctions the new indices", func(t *testing.T) {
		_, err := h.client.UpdateDesiredLRP(h.ctx(), &bbsv1.UpdateDesiredLRPRequest{
			ProcessGuid: "web", Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(5)},
		})
		require.NoError(t, err)
		rows, _ := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{ProcessGuid: "web"})
		require.Equal(t, []int32{0, 1, 2, 3, 4}, indicesOf(rows))
		h.eventually(func() bool { return len(h.auctioneer.lrpIndices("web")) == 5 }, "scale-up auction")
		require.ElementsMatch(t, []int32{0, 1, 2, 3, 4}, h.auctioneer.lrpIndices("web"))
	})

	t.Run("scale down deletes unplaced extras at once and stops placed ones", func(t *testing.T) {
		h.registerCell("cell-1")
		h.claim("web", 3, "cell-1")
		h.start("web", 4, "cell-1")

		_, err := h.client.UpdateDesiredLRP(h.ctx(), &bbsv1.UpdateDesiredLRPRequest{
			ProcessGuid: "web", Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(2)},
		})
		require.NoError(t, err)
		rows, _ := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{ProcessGuid: "web"})
		require.Equal(t, []int32{0, 1, 3, 4}, indicesOf(rows), "UNCLAIMED index 2 deleted, placed 3 and 4 left to their rep")
		h.eventually(func() bool { return len(h.rep.stopped()) == 2 }, "rep asked to stop both placed extras")
		stopped := map[int32]string{}
		for _, s := range h.rep.stopped() {
			require.Equal(t, "web", s.GetProcessGuid())
			stopped[s.GetIndex()] = s.GetInstanceGuid()
		}
		require.Equal(t, map[int32]string{3: "web-3-instance", 4: "web-4-instance"}, stopped)

		got, err := h.client.GetDesiredLRP(h.ctx(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: "web"})
		require.NoError(t, err)
		require.Equal(t, int32(2), got.GetDesiredLrp().GetInstances())
	})

	t.Run("update refusals", func(t *testing.T) {
		_, err := h.client.UpdateDesiredLRP(h.ctx(), &bbsv1.UpdateDesiredLRPRequest{
			ProcessGuid: "missing", Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(1)},
		})
		requireCode(t, err, codes.NotFound)
		_, err = h.client.UpdateDesiredLRP(h.ctx(), &bbsv1.UpdateDesiredLRPRequest{
			ProcessGuid: "web", Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(-1)},
		})
		requireCode(t, err, codes.InvalidArgument)
		require.Contains(t, status.Convert(err).Message(), "instances")
	})

	t.Run("views", func(t *testing.T) {
		h.desire("worker", 1)
		infos, err := h.client.ListDesiredLRPSchedulingInfos(h.ctx(), &bbsv1.ListDesiredLRPSchedulingInfosRequest{Domain: testDomain})
		require.NoError(t, err)
		require.Len(t, infos.GetSchedulingInfos(), 2)

		info, err := h.client.GetDesiredLRPSchedulingInfo(h.ctx(), &bbsv1.GetDesiredLRPSchedulingInfoRequest{ProcessGuid: "worker"})
		require.NoError(t, err)
		require.Equal(t, "preloaded:cflinuxfs4", info.GetSchedulingInfo().GetRootfs())
		require.Equal(t, int32(128), info.GetSchedulingInfo().GetResource().GetMemoryMb())
		_, err = h.client.GetDesiredLRPSchedulingInfo(h.ctx(), &bbsv1.GetDesiredLRPSchedulingInfoRequest{ProcessGuid: "missing"})
		requireCode(t, err, codes.NotFound)

		routing, err := h.client.ListDesiredLRPRoutingInfos(h.ctx(), &bbsv1.ListDesiredLRPRoutingInfosRequest{ProcessGuids: []string{"worker"}})
		require.NoError(t, err)
		require.Len(t, routing.GetRoutingInfos(), 1)
		require.Equal(t, "worker", routing.GetRoutingInfos()[0].GetProcessGuid())

		list, err := h.client.ListDesiredLRPs(h.ctx(), &bbsv1.ListDesiredLRPsRequest{ProcessGuids: []string{"worker"}})
		require.NoError(t, err)
		require.Len(t, list.GetDesiredLrps(), 1)
	})

	t.Run("remove deletes the LRP and unplaced rows and stops placed ones", func(t *testing.T) {
		before := len(h.rep.stopped())
		h.start("web", 0, "cell-1")
		_, err := h.client.RemoveDesiredLRP(h.ctx(), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: "web"})
		require.NoError(t, err)

		_, err = h.client.GetDesiredLRP(h.ctx(), &bbsv1.GetDesiredLRPRequest{ProcessGuid: "web"})
		requireCode(t, err, codes.NotFound)
		rows, _ := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{ProcessGuid: "web"})
		for _, r := range rows {
			require.NotEqual(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, r.GetState(), "unplaced row %d left", r.GetIndex())
		}
		stoppedAfterRemove := func() []int32 {
			var indices []int32
			for _, s := range h.rep.stopped()[before:] {
				indices = append(indices, s.GetIndex())
			}
			return indices
		}
		h.eventually(func() bool { return len(stoppedAfterRemove()) == 3 }, "rep asked to stop every placed row")
		require.ElementsMatch(t, []int32{0, 3, 4}, stoppedAfterRemove())

		_, err = h.client.RemoveDesiredLRP(h.ctx(), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: "web"})
		requireCode(t, err, codes.NotFound)
		_, err = h.client.RemoveDesiredLRP(h.ctx(), &bbsv1.RemoveDesiredLRPRequest{})
		requireCode(t, err, codes.InvalidArgument)
	})
}
