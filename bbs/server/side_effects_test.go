package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// TestHandlerWaitsForASideEffectSlotOnlyWhileItsRequestLives: with every slot of the
// side effects' pool taken, a request whose change needs an auction does not hold its
// handler past the request: when the caller gives up, the handler returns, the change
// stands and the auction is dropped and counted (convergence auctions stale UNCLAIMED
// rows again). Before, the handler blocked until a slot freed up, however long.
func TestHandlerWaitsForASideEffectSlotOnlyWhileItsRequestLives(t *testing.T) {
	h := newHarness(t)
	release := h.server.TakeBackgroundSlotsForTest()
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := h.client.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: desiredLRP("app", 2)})
		done <- err
	}()
	h.eventually(func() bool { return h.actual("app", 1) != nil }, "the change is stored")
	cancel()
	requireCode(t, <-done, codes.Canceled)
	h.eventually(func() bool { return h.droppedSideEffects("background", "request_ended") == 1 }, "the auction is dropped")

	release()
	h.server.Wait()
	require.Empty(t, h.auctioneer.lrpIndices("app"), "the dropped auction never runs")
	require.NotNil(t, h.actual("app", 0), "the change stands")
}
