package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/server"
	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestActualLRPLifecycle(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	h.desire("app", 2)
	h.eventually(func() bool { return len(h.auctioneer.lrpIndices("app")) == 2 }, "initial auction")

	t.Run("claim", func(t *testing.T) {
		h.claim("app", 0, "cell-1")
		a := h.actual("app", 0)
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED, a.GetState())
		require.Equal(t, "cell-1", a.GetCellId())
		h.claim("app", 0, "cell-1") // same key again: a no-op
	})

	t.Run("claim refusals", func(t *testing.T) {
		cases := []struct {
			name string
			req  *bbsv1.ClaimActualLRPRequest
			code codes.Code
		}{
			{"unknown index", &bbsv1.ClaimActualLRPRequest{ProcessGuid: "app", Index: 7, ActualLrpInstanceKey: instanceKey("app", 7, "cell-1")}, codes.NotFound},
			{"another instance", &bbsv1.ClaimActualLRPRequest{ProcessGuid: "app", Index: 0, ActualLrpInstanceKey: instanceKey("other", 0, "cell-2")}, codes.FailedPrecondition},
			{"no instance key", &bbsv1.ClaimActualLRPRequest{ProcessGuid: "app", Index: 1}, codes.InvalidArgument},
			{"empty cell id", &bbsv1.ClaimActualLRPRequest{ProcessGuid: "app", Index: 1, ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{InstanceGuid: "i"}}, codes.InvalidArgument},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := h.client.ClaimActualLRP(h.ctx(), tc.req)
				requireCode(t, err, tc.code)
			})
		}
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, h.actual("app", 1).GetState())
		require.Equal(t, "cell-1", h.actual("app", 0).GetCellId())
	})

	t.Run("start", func(t *testing.T) {
		h.start("app", 0, "cell-1")
		a := h.actual("app", 0)
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, a.GetState())
		require.Equal(t, "10.0.0.1", a.GetNetInfo().GetAddress())
		require.True(t, a.GetRoutable(), "routable defaults to true")

		_, err := h.client.StartActualLRP(h.ctx(), &bbsv1.StartActualLRPRequest{
			ActualLrpKey:         &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: 1, Domain: testDomain},
			ActualLrpInstanceKey: instanceKey("app", 1, "cell-1"),
			ActualLrpNetInfo:     &modelsv1.ActualLRPNetInfo{},
		})
		requireCode(t, err, codes.InvalidArgument)
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, h.actual("app", 1).GetState())
	})

	t.Run("crash restarts at once and auctions the index again", func(t *testing.T) {
		_, err := h.client.CrashActualLRP(h.ctx(), &bbsv1.CrashActualLRPRequest{
			ActualLrpKey:         &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: 0, Domain: testDomain},
			ActualLrpInstanceKey: instanceKey("app", 0, "cell-1"),
			ErrorMessage:         "exit status 1",
		})
		require.NoError(t, err)
		a := h.actual("app", 0)
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, a.GetState())
		require.Equal(t, int32(1), a.GetCrashCount())
		require.Equal(t, "exit status 1", a.GetCrashReason())
		h.eventually(func() bool { return len(h.auctioneer.lrpIndices("app")) == 3 }, "restart auction")
		require.Equal(t, int32(0), h.auctioneer.lrpIndices("app")[2])
	})

	t.Run("crash of an unknown instance is refused", func(t *testing.T) {
		_, err := h.client.CrashActualLRP(h.ctx(), &bbsv1.CrashActualLRPRequest{
			ActualLrpKey:         &modelsv1.ActualLRPKey{ProcessGuid: "nope", Index: 0, Domain: testDomain},
			ActualLrpInstanceKey: instanceKey("nope", 0, "cell-1"),
		})
		requireCode(t, err, codes.NotFound)
	})

	t.Run("fail records the placement error", func(t *testing.T) {
		_, err := h.client.FailActualLRP(h.ctx(), &bbsv1.FailActualLRPRequest{
			ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: 1, Domain: testDomain},
			ErrorMessage: "insufficient resources: memory",
		})
		require.NoError(t, err)
		require.Equal(t, "insufficient resources: memory", h.actual("app", 1).GetPlacementError())
	})

	t.Run("remove matches the instance key", func(t *testing.T) {
		h.claim("app", 1, "cell-1")
		_, err := h.client.RemoveActualLRP(h.ctx(), &bbsv1.RemoveActualLRPRequest{
			ProcessGuid: "app", Index: 1, ActualLrpInstanceKey: instanceKey("app", 1, "cell-9"),
		})
		require.Error(t, err)
		require.NotNil(t, h.actual("app", 1))
		_, err = h.client.RemoveActualLRP(h.ctx(), &bbsv1.RemoveActualLRPRequest{
			ProcessGuid: "app", Index: 1, ActualLrpInstanceKey: instanceKey("app", 1, "cell-1"),
		})
		require.NoError(t, err)
		require.Nil(t, h.actual("app", 1))
	})
}

func TestRetireActualLRP(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	h.registerCell("cell-gone")
	h.desire("app", 4)
	h.start("app", 1, "cell-1")
	h.claim("app", 2, "cell-gone")
	h.start("app", 3, "cell-gone")
	_, err := h.client.RemoveCell(h.ctx(), &bbsv1.RemoveCellRequest{CellId: "cell-gone"})
	require.NoError(t, err)

	retire := func(index int32) error {
		// Retire names only the guid and the index: the domain may be empty.
		_, err := h.client.RetireActualLRP(h.ctx(), &bbsv1.RetireActualLRPRequest{
			ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: index},
		})
		return err
	}

	t.Run("an UNCLAIMED instance is deleted", func(t *testing.T) {
		require.NoError(t, retire(0))
		require.Nil(t, h.actual("app", 0))
	})

	t.Run("a RUNNING instance is stopped by its rep", func(t *testing.T) {
		require.NoError(t, retire(1))
		h.eventually(func() bool { return len(h.rep.stopped()) == 1 }, "rep asked to stop")
		stop := h.rep.stopped()[0]
		require.Equal(t, "app", stop.GetProcessGuid())
		require.Equal(t, int32(1), stop.GetIndex())
		require.Equal(t, "app-1-instance", stop.GetInstanceGuid())
		require.NotNil(t, h.actual("app", 1), "the rep reports the stop itself")
	})

	t.Run("an instance whose cell is gone is deleted", func(t *testing.T) {
		require.NoError(t, retire(2))
		require.NoError(t, retire(3))
		h.eventually(func() bool { return h.actual("app", 2) == nil && h.actual("app", 3) == nil }, "rows on the gone cell deleted")
		require.Len(t, h.rep.stopped(), 1, "no rep was asked")
	})

	t.Run("refusals", func(t *testing.T) {
		requireCode(t, retire(0), codes.NotFound)
		_, err := h.client.RetireActualLRP(h.ctx(), &bbsv1.RetireActualLRPRequest{})
		requireCode(t, err, codes.InvalidArgument)
		_, err = h.client.RetireActualLRP(h.ctx(), &bbsv1.RetireActualLRPRequest{
			ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: -1},
		})
		requireCode(t, err, codes.InvalidArgument)
	})
}

func TestListActualLRPs(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	h.desire("big", 2500)
	h.desire("small", 2)
	h.claim("small", 1, "cell-1")

	t.Run("batches of 1000 rows", func(t *testing.T) {
		rows, messages := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{ProcessGuid: "big"})
		require.Len(t, rows, 2500)
		require.Equal(t, 3, messages)
		require.True(t, slices.IsSortedFunc(rows, func(a, b *modelsv1.ActualLRP) int { return int(a.GetIndex() - b.GetIndex()) }))
	})

	t.Run("filters", func(t *testing.T) {
		cases := []struct {
			name string
			req  *bbsv1.ListActualLRPsRequest
			want int
		}{
			{"all", &bbsv1.ListActualLRPsRequest{}, 2502},
			{"domain", &bbsv1.ListActualLRPsRequest{Domain: testDomain}, 2502},
			{"other domain", &bbsv1.ListActualLRPsRequest{Domain: "nope"}, 0},
			{"cell", &bbsv1.ListActualLRPsRequest{CellId: "cell-1"}, 1},
			{"guid and index", &bbsv1.ListActualLRPsRequest{ProcessGuid: "small", Index: proto.Int32(0)}, 1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				rows, messages := h.listActualLRPs(tc.req)
				require.Len(t, rows, tc.want)
				require.Equal(t, (tc.want+server.ListActualLRPsBatchSize-1)/server.ListActualLRPsBatchSize, messages)
			})
		}
	})
}

// TestListActualLRPs100k lists 100,000 rows end to end through gRPC.
func TestListActualLRPs100k(t *testing.T) {
	h := newHarness(t)
	const lrps, perLRP = 50, 2000
	for i := range lrps {
		h.desire(fmt.Sprintf("lrp-%03d", i), perLRP)
	}
	// Warm up the connection and the database's caches, then measure.
	h.listActualLRPs(&bbsv1.ListActualLRPsRequest{ProcessGuid: "lrp-000"})
	start := time.Now()
	rows, messages := h.listActualLRPs(&bbsv1.ListActualLRPsRequest{})
	elapsed := time.Since(start)
	require.Len(t, rows, lrps*perLRP)
	require.Equal(t, lrps*perLRP/server.ListActualLRPsBatchSize, messages)
	// No bound on the time (house rule: speed is measured by make bench, not asserted);
	// it is well under a second on an idle machine, several under the race detector.
	t.Logf("listed %d rows in %d messages in %s (%.0f rows/s)", len(rows), messages, elapsed, float64(len(rows))/elapsed.Seconds())
}

// claimingDB is the store with a seam for TestRetireActualLRPRacingClaim: the first time
// the server reads the row it retires, or asks the store to retire it, a rep's claim of
// that row lands first.
type claimingDB struct {
	store.DB
	once     sync.Once
	claim    func() error
	claimErr error
}

func (d *claimingDB) landClaim() { d.once.Do(func() { d.claimErr = d.claim() }) }

// GetActualLRP is the read of a retire that reads outside a transaction: the claim lands
// between that read and the write that follows it.
func (d *claimingDB) GetActualLRP(ctx context.Context, processGuid string, index int32, presence modelsv1.ActualLRPPresence) (*modelsv1.ActualLRP, error) {
	lrp, err := d.DB.GetActualLRP(ctx, processGuid, index, presence)
	d.landClaim()
	return lrp, err
}

// RetireActualLRP reads and writes in one transaction: the claim can only land before it
// (or wait for it).
func (d *claimingDB) RetireActualLRP(ctx context.Context, processGuid string, index int32) (*modelsv1.ActualLRP, error) {
	d.landClaim()
	return d.DB.RetireActualLRP(ctx, processGuid, index)
}

// TestRetireActualLRPRacingClaim: a rep claims an UNCLAIMED instance while it is being
// retired. The claimed instance must not lose its row behind its rep's back: the retire
// must see the claim and ask the rep to stop that instance. Before the retire became one
// store transaction, the handler read the row UNCLAIMED, the claim landed, and the
// handler deleted the CLAIMED row without an instance key, and no rep was told.
func TestRetireActualLRPRacingClaim(t *testing.T) {
	ik := instanceKey("app", 0, "cell-1")
	var db *claimingDB
	h := newHarnessWith(t, harnessOptions{wrapDB: func(real store.DB) store.DB {
		db = &claimingDB{DB: real, claim: func() error {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			_, err := real.ClaimActualLRP(ctx, "app", 0, ik)
			return err
		}}
		return db
	}})
	h.registerCell("cell-1")
	h.desire("app", 1)

	_, err := h.client.RetireActualLRP(h.ctx(), &bbsv1.RetireActualLRPRequest{
		ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "app", Index: 0},
	})
	require.NoError(t, err)
	require.NoError(t, db.claimErr, "the claim landed during the retire")

	row := h.actual("app", 0)
	require.NotNil(t, row, "the CLAIMED row of a running claim is not deleted behind its rep's back")
	require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED, row.GetState())
	require.Equal(t, ik.GetInstanceGuid(), row.GetInstanceGuid())
	h.eventually(func() bool { return len(h.rep.stopped()) == 1 }, "the rep of the claiming cell is asked to stop the instance")
	stop := h.rep.stopped()[0]
	require.Equal(t, "app", stop.GetProcessGuid())
	require.Equal(t, int32(0), stop.GetIndex())
	require.Equal(t, ik.GetInstanceGuid(), stop.GetInstanceGuid())
}
