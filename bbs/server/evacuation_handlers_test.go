package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// evacuatingRow fetches the EVACUATING row of an index, or nil if there is none.
func (h *harness) evacuatingRow(guid string, index int32) *modelsv1.ActualLRP {
	h.t.Helper()
	rows, _ := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{ProcessGuid: guid, Index: &index})
	for _, r := range rows {
		if r.GetPresence() == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING {
			return r
		}
	}
	return nil
}

// evacuateRunning reports an index RUNNING on a draining cell and returns keep_container.
func (h *harness) evacuateRunning(guid string, index int32, cellID string) bool {
	h.t.Helper()
	resp, err := h.client.EvacuateRunningActualLRP(h.ctx(), &bbsv1.EvacuateRunningActualLRPRequest{
		ActualLrpKey:         lrpKeyOf(guid, index),
		ActualLrpInstanceKey: instanceKey(guid, index, cellID),
		ActualLrpNetInfo:     &modelsv1.ActualLRPNetInfo{Address: "10.0.0.9"},
	})
	require.NoError(h.t, err)
	return resp.GetKeepContainer()
}

func lrpKeyOf(guid string, index int32) *modelsv1.ActualLRPKey {
	return &modelsv1.ActualLRPKey{ProcessGuid: guid, Index: index, Domain: testDomain}
}

// TestEvacuationOverGRPC drains one running instance: it keeps serving as EVACUATING
// while its index is auctioned again, the replacement's start removes it, and the
// draining cell is then told to stop it without touching the replacement.
func TestEvacuationOverGRPC(t *testing.T) {
	h := newHarness(t)
	h.desire("app", 1)
	h.eventually(func() bool { return len(h.auctioneer.lrpIndices("app")) == 1 }, "initial auction")
	h.start("app", 0, "cell-draining")

	require.True(t, h.evacuateRunning("app", 0, "cell-draining"))
	evac := h.evacuatingRow("app", 0)
	require.NotNil(t, evac)
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, evac.GetState())
	require.Equal(t, "10.0.0.9", evac.GetNetInfo().GetAddress())
	require.True(t, evac.GetRoutable(), "routable defaults to true")
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, h.actual("app", 0).GetState())
	h.eventually(func() bool { return len(h.auctioneer.lrpIndices("app")) == 2 }, "the unclaimed index is auctioned")
	require.Equal(t, []int32{0, 0}, h.auctioneer.lrpIndices("app"))

	require.True(t, h.evacuateRunning("app", 0, "cell-draining"), "keep while the replacement is unplaced")
	h.start("app", 0, "cell-2")
	require.Nil(t, h.evacuatingRow("app", 0), "the replacement's start removes the EVACUATING row")
	require.False(t, h.evacuateRunning("app", 0, "cell-draining"))

	resp, err := h.client.EvacuateStoppedActualLRP(h.ctx(), &bbsv1.EvacuateStoppedActualLRPRequest{
		ActualLrpKey: lrpKeyOf("app", 0), ActualLrpInstanceKey: instanceKey("app", 0, "cell-draining"),
	})
	require.NoError(t, err)
	require.False(t, resp.GetKeepContainer())
	replacement := h.actual("app", 0)
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, replacement.GetState())
	require.Equal(t, "cell-2", replacement.GetCellId())
	require.Len(t, h.auctioneer.lrpIndices("app"), 2, "no further auction")
}

func TestEvacuateClaimedAndCrashedAuction(t *testing.T) {
	h := newHarness(t)
	h.desire("app", 2)
	h.eventually(func() bool { return len(h.auctioneer.lrpIndices("app")) == 2 }, "initial auction")
	h.claim("app", 0, "cell-draining")
	h.start("app", 1, "cell-draining")

	claimed, err := h.client.EvacuateClaimedActualLRP(h.ctx(), &bbsv1.EvacuateClaimedActualLRPRequest{
		ActualLrpKey: lrpKeyOf("app", 0), ActualLrpInstanceKey: instanceKey("app", 0, "cell-draining"),
	})
	require.NoError(t, err)
	require.False(t, claimed.GetKeepContainer())
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, h.actual("app", 0).GetState())
	h.eventually(func() bool { return len(h.auctioneer.lrpIndices("app")) == 3 }, "auction after evacuate claimed")

	crashed, err := h.client.EvacuateCrashedActualLRP(h.ctx(), &bbsv1.EvacuateCrashedActualLRPRequest{
		ActualLrpKey: lrpKeyOf("app", 1), ActualLrpInstanceKey: instanceKey("app", 1, "cell-draining"),
		ErrorMessage: "exit status 1",
	})
	require.NoError(t, err)
	require.False(t, crashed.GetKeepContainer())
	a := h.actual("app", 1)
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, a.GetState())
	require.Equal(t, int32(1), a.GetCrashCount())
	h.eventually(func() bool { return len(h.auctioneer.lrpIndices("app")) == 4 }, "auction after evacuate crashed")
	require.Equal(t, []int32{0, 1, 0, 1}, h.auctioneer.lrpIndices("app"))
}

func TestRemoveEvacuatingOverGRPC(t *testing.T) {
	h := newHarness(t)
	h.desire("app", 1)
	h.start("app", 0, "cell-draining")
	require.True(t, h.evacuateRunning("app", 0, "cell-draining"))

	req := &bbsv1.RemoveEvacuatingActualLRPRequest{ActualLrpKey: lrpKeyOf("app", 0), ActualLrpInstanceKey: instanceKey("app", 0, "cell-other")}
	_, err := h.client.RemoveEvacuatingActualLRP(h.ctx(), req)
	requireCode(t, err, codes.NotFound)
	require.NotNil(t, h.evacuatingRow("app", 0))

	req.ActualLrpInstanceKey = instanceKey("app", 0, "cell-draining")
	_, err = h.client.RemoveEvacuatingActualLRP(h.ctx(), req)
	require.NoError(t, err)
	require.Nil(t, h.evacuatingRow("app", 0))
}

func TestEvacuationRequestValidation(t *testing.T) {
	h := newHarness(t)
	h.desire("app", 1)
	h.start("app", 0, "cell-draining")
	key, ik := lrpKeyOf("app", 0), instanceKey("app", 0, "cell-draining")
	noCell := &modelsv1.ActualLRPInstanceKey{InstanceGuid: ik.GetInstanceGuid()}
	noGuid := &modelsv1.ActualLRPKey{Index: 0, Domain: testDomain}
	net := &modelsv1.ActualLRPNetInfo{Address: "10.0.0.9"}

	cases := []struct {
		name  string
		field string
		call  func() error
	}{
		{"running without key", "actual_lrp_key", func() error {
			_, err := h.client.EvacuateRunningActualLRP(h.ctx(), &bbsv1.EvacuateRunningActualLRPRequest{ActualLrpInstanceKey: ik, ActualLrpNetInfo: net})
			return err
		}},
		{"running without net info", "actual_lrp_net_info", func() error {
			_, err := h.client.EvacuateRunningActualLRP(h.ctx(), &bbsv1.EvacuateRunningActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik})
			return err
		}},
		{"running without address", "actual_lrp_net_info.address", func() error {
			_, err := h.client.EvacuateRunningActualLRP(h.ctx(), &bbsv1.EvacuateRunningActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: ik, ActualLrpNetInfo: &modelsv1.ActualLRPNetInfo{}})
			return err
		}},
		{"claimed without instance key", "actual_lrp_instance_key", func() error {
			_, err := h.client.EvacuateClaimedActualLRP(h.ctx(), &bbsv1.EvacuateClaimedActualLRPRequest{ActualLrpKey: key})
			return err
		}},
		{"stopped without cell id", "actual_lrp_instance_key.cell_id", func() error {
			_, err := h.client.EvacuateStoppedActualLRP(h.ctx(), &bbsv1.EvacuateStoppedActualLRPRequest{ActualLrpKey: key, ActualLrpInstanceKey: noCell})
			return err
		}},
		{"crashed without process guid", "actual_lrp_key.process_guid", func() error {
			_, err := h.client.EvacuateCrashedActualLRP(h.ctx(), &bbsv1.EvacuateCrashedActualLRPRequest{ActualLrpKey: noGuid, ActualLrpInstanceKey: ik})
			return err
		}},
		{"remove evacuating without key", "actual_lrp_key", func() error {
			_, err := h.client.RemoveEvacuatingActualLRP(h.ctx(), &bbsv1.RemoveEvacuatingActualLRPRequest{ActualLrpInstanceKey: ik})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			requireCode(t, err, codes.InvalidArgument)
			require.Contains(t, err.Error(), tc.field)
		})
	}
	a := h.actual("app", 0)
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, a.GetState(), "refused calls change nothing")
	require.Equal(t, "cell-draining", a.GetCellId())
	require.Nil(t, h.evacuatingRow("app", 0))
}
