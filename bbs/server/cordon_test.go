package server_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// listedCordons maps the listed cells to their cordon reason, cordoned ones only.
func (h *harness) listedCordons() map[string]string {
	h.t.Helper()
	resp, err := h.client.ListCells(h.ctx(), &bbsv1.ListCellsRequest{})
	require.NoError(h.t, err)
	cordons := map[string]string{}
	for _, c := range resp.GetCells() {
		if c.GetCordoned() {
			cordons[c.GetCellId()] = c.GetCordonReason()
		}
	}
	return cordons
}

func TestCordonCell(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	h.registerCell("cell-2")

	_, err := h.client.CordonCell(h.ctx(), &bbsv1.CordonCellRequest{Reason: "x"})
	requireCode(t, err, codes.InvalidArgument)
	require.ErrorContains(t, err, "cell_id")
	_, err = h.client.UncordonCell(h.ctx(), &bbsv1.UncordonCellRequest{})
	requireCode(t, err, codes.InvalidArgument)
	require.ErrorContains(t, err, "cell_id")

	_, err = h.client.CordonCell(h.ctx(), &bbsv1.CordonCellRequest{CellId: "cell-1", Reason: "maintenance"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cell-1": "maintenance"}, h.listedCordons())

	h.registerCell("cell-1")
	require.Equal(t, map[string]string{"cell-1": "maintenance"}, h.listedCordons(), "a heartbeat keeps the cordon")
	require.True(t, h.firstSnapshotMessage().GetCells()[0].GetCordoned(), "the snapshot's cells carry cordons")

	resp, err := h.client.UncordonCell(h.ctx(), &bbsv1.UncordonCellRequest{CellId: "cell-1"})
	require.NoError(t, err)
	require.True(t, resp.GetWasCordoned())
	require.Empty(t, h.listedCordons())
	resp, err = h.client.UncordonCell(h.ctx(), &bbsv1.UncordonCellRequest{CellId: "cell-1"})
	require.NoError(t, err)
	require.False(t, resp.GetWasCordoned())
}

func TestUncordonAuctionsUnplacedWorkAtOnce(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	_, err := h.client.CordonCell(h.ctx(), &bbsv1.CordonCellRequest{CellId: "cell-1", Reason: "kernel upgrade"})
	require.NoError(t, err)

	h.desire("placed", 1)
	h.claim("placed", 0, "cell-1")
	h.start("placed", 0, "cell-1")
	h.desire("unplaced", 2)
	_, err = h.client.FailActualLRP(h.ctx(), &bbsv1.FailActualLRPRequest{
		ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "unplaced", Index: 1, Domain: testDomain},
		ErrorMessage: "all compatible cells are cordoned: cell-1 (kernel upgrade)",
	})
	require.NoError(t, err)
	h.desireTask("pending", "")
	h.eventually(func() bool {
		return len(h.auctioneer.lrpIndices("unplaced")) == 2 && slices.Contains(h.auctioneer.taskGuids(), "pending")
	}, "desiring asks for the auctions")

	resp, err := h.client.UncordonCell(h.ctx(), &bbsv1.UncordonCellRequest{CellId: "cell-1"})
	require.NoError(t, err)
	require.True(t, resp.GetWasCordoned())
	h.eventually(func() bool {
		return slices.Equal(h.auctioneer.lrpIndices("unplaced"), []int32{0, 1, 1}) &&
			slices.Equal(h.auctioneer.taskGuids(), []string{"pending", "pending"})
	}, "uncordoning re-auctions the instance with a placement error and the pending task")
	require.Equal(t, []int32{0}, h.auctioneer.lrpIndices("placed"), "placed instances are not auctioned again")
}
