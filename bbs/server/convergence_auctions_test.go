package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestDeferredAuctionsGoOutInOneRequest(t *testing.T) {
	h := newHarness(t)
	h.desire("app", 3)
	h.eventually(func() bool { return len(h.auctioneer.auctionRequests()) == 1 }, "the desire is auctioned")
	_, err := h.db.RemoveActualLRP(h.ctx(), "app", 2, nil)
	require.NoError(t, err)
	desired, err := h.db.GetDesiredLRP(h.ctx(), "app")
	require.NoError(t, err)
	pending := h.storedTask("kick-1", "", modelsv1.TaskState_TASK_STATE_PENDING)
	h.storedTask("done-1", "", modelsv1.TaskState_TASK_STATE_COMPLETED)

	lrps, err := h.client.ConvergenceServiceClient.ApplyLRPActions(h.ctx(), &bbsv1.ApplyLRPActionsRequest{DeferAuction: true, Actions: []*bbsv1.LRPAction{
		{Reason: "index missing", Action: &bbsv1.LRPAction_CreateMissing{CreateMissing: &bbsv1.CreateMissingLRPAction{
			Key: &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: 2, Domain: testDomain}, DesiredModificationTag: desired.GetModificationTag()}}},
	}})
	require.NoError(t, err)
	require.True(t, lrps.GetResults()[0].GetApplied())
	tasks, err := h.client.ConvergenceServiceClient.ApplyTaskActions(h.ctx(), &bbsv1.ApplyTaskActionsRequest{DeferAuction: true, Actions: []*bbsv1.TaskAction{
		{Reason: "pending", Action: &bbsv1.TaskAction_Kick{Kick: taskCondition(pending)}},
	}})
	require.NoError(t, err)
	require.True(t, tasks.GetResults()[0].GetApplied())
	h.server.Wait()
	require.Len(t, h.auctioneer.auctionRequests(), 1, "deferred: no LRP auction yet")
	require.Empty(t, h.auctioneer.taskBatchesReceived(), "deferred: no task auction yet")

	resp, err := h.client.ConvergenceServiceClient.RequestAuctions(h.ctx(), &bbsv1.RequestAuctionsRequest{
		Lrps:      []*bbsv1.LRPIndices{{ProcessGuid: "app", Indices: []int32{2, 0, 2}}, {ProcessGuid: "gone", Indices: []int32{0}}},
		TaskGuids: []string{"kick-1", "done-1", "missing"},
	})
	require.NoError(t, err)
	require.Equal(t, int32(2), resp.GetLrpIndices(), "duplicates and gone DesiredLRPs are skipped")
	require.Equal(t, int32(1), resp.GetTasks(), "only PENDING tasks are auctioned")
	h.eventually(func() bool { return len(h.auctioneer.auctionRequests()) == 2 }, "one LRP auction request")
	req := h.auctioneer.auctionRequests()[1]
	require.Equal(t, "app", req.GetProcessGuid())
	require.Equal(t, []int32{0, 2}, req.GetIndices())
	h.eventually(func() bool { return len(h.auctioneer.taskBatchesReceived()) == 1 }, "one task auction request")
	require.Equal(t, [][]string{{"kick-1"}}, h.auctioneer.taskBatchesReceived())
}

func TestRequestAuctionsValidation(t *testing.T) {
	h := newHarness(t)
	for name, req := range map[string]*bbsv1.RequestAuctionsRequest{
		"lrps[0].process_guid": {Lrps: []*bbsv1.LRPIndices{{Indices: []int32{0}}}},
		"lrps[0].indices":      {Lrps: []*bbsv1.LRPIndices{{ProcessGuid: "app", Indices: []int32{-1}}}},
		"task_guids[1]":        {TaskGuids: []string{"t", ""}},
	} {
		_, err := h.client.ConvergenceServiceClient.RequestAuctions(h.ctx(), req)
		requireCode(t, err, codes.InvalidArgument)
		require.Contains(t, err.Error(), name)
	}
	h.server.Wait()
	require.Empty(t, h.auctioneer.auctionRequests())
}
