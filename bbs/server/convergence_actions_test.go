package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// rowCondition is the condition a plan would carry for row a.
func rowCondition(a *modelsv1.ActualLRP) *bbsv1.LRPRowCondition {
	return &bbsv1.LRPRowCondition{
		Key:             &modelsv1.ActualLRPKey{ProcessGuid: a.GetProcessGuid(), Index: a.GetIndex(), Domain: a.GetDomain()},
		Presence:        a.GetPresence(),
		State:           a.GetState(),
		ModificationTag: proto.CloneOf(a.GetModificationTag()),
	}
}

// auctionRequests returns the LRP start requests the auctioneer received, in order.
func (f *fakeAuctioneer) auctionRequests() []*modelsv1.LRPStartRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*modelsv1.LRPStartRequest(nil), f.lrps...)
}

func TestApplyLRPActions(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	h.desire("app", 3)
	h.claim("app", 0, "cell-1")
	h.start("app", 0, "cell-1")
	_, err := h.db.RemoveActualLRP(h.ctx(), "app", 2, nil)
	require.NoError(t, err)
	desired, err := h.db.GetDesiredLRP(h.ctx(), "app")
	require.NoError(t, err)
	running, unclaimed := h.actual("app", 0), h.actual("app", 1)
	stale := rowCondition(unclaimed)
	stale.ModificationTag.Index++
	h.eventually(func() bool { return len(h.auctioneer.auctionRequests()) == 1 }, "the desire is auctioned")

	resp, err := h.client.ConvergenceServiceClient.ApplyLRPActions(h.ctx(), &bbsv1.ApplyLRPActionsRequest{Actions: []*bbsv1.LRPAction{
		{Reason: "index missing", Action: &bbsv1.LRPAction_CreateMissing{CreateMissing: &bbsv1.CreateMissingLRPAction{
			Key: &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: 2, Domain: testDomain}, DesiredModificationTag: desired.GetModificationTag()}}},
		{Reason: "cell vanished", Action: &bbsv1.LRPAction_MarkSuspect{MarkSuspect: rowCondition(running)}},
		{Reason: "extra index", Action: &bbsv1.LRPAction_Retire{Retire: stale}},
		{Reason: "stale unclaimed", Action: &bbsv1.LRPAction_Unclaim{Unclaim: rowCondition(unclaimed)}},
	}})
	require.NoError(t, err)
	results := resp.GetResults()
	require.Len(t, results, 4)
	for i, applied := range []bool{true, true, false, true} {
		require.Equal(t, applied, results[i].GetApplied(), "result %d: %s", i, results[i].GetRefusedReason())
	}
	require.Contains(t, results[2].GetRefusedReason(), "row moved on: state UNCLAIMED")
	require.NotNil(t, h.actual("app", 1), "the refused retire left the row")

	h.eventually(func() bool { return len(h.auctioneer.auctionRequests()) == 2 }, "one auction request for the plan")
	req := h.auctioneer.auctionRequests()[1]
	require.Equal(t, "app", req.GetProcessGuid())
	require.Equal(t, []int32{0, 1, 2}, req.GetIndices())
}
