package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestDomainService(t *testing.T) {
	clock := &storetest.Clock{}
	h := newHarnessWith(t, harnessOptions{clock: clock})
	domains := func() []string {
		resp, err := h.client.ListDomains(h.ctx(), &bbsv1.ListDomainsRequest{})
		require.NoError(t, err)
		return resp.GetDomains()
	}

	for _, d := range []string{"forever", "brief", "another"} {
		ttl := uint32(0)
		if d == "brief" {
			ttl = 1
		}
		_, err := h.client.UpsertDomain(h.ctx(), &bbsv1.UpsertDomainRequest{Domain: d, TtlSeconds: ttl})
		require.NoError(t, err)
	}
	require.Equal(t, []string{"another", "brief", "forever"}, domains(), "sorted")

	_, err := h.client.UpsertDomain(h.ctx(), &bbsv1.UpsertDomainRequest{})
	requireCode(t, err, codes.InvalidArgument)

	clock.Advance(999 * time.Millisecond)
	require.Equal(t, []string{"another", "brief", "forever"}, domains(), "still fresh just before the ttl")
	clock.Advance(time.Millisecond)
	require.Equal(t, []string{"another", "forever"}, domains(), "brief expired, ttl 0 stays forever")
	clock.Advance(100 * 365 * 24 * time.Hour)
	require.Equal(t, []string{"another", "forever"}, domains())
}

func TestCellService(t *testing.T) {
	clock := &storetest.Clock{}
	h := newHarnessWith(t, harnessOptions{clock: clock})
	h.registerCell("cell-b")
	h.registerCell("cell-a")

	resp, err := h.client.ListCells(h.ctx(), &bbsv1.ListCellsRequest{})
	require.NoError(t, err)
	require.Len(t, resp.GetCells(), 2)
	ids := []string{resp.GetCells()[0].GetCellId(), resp.GetCells()[1].GetCellId()}
	require.ElementsMatch(t, []string{"cell-a", "cell-b"}, ids)
	require.NotZero(t, resp.GetCells()[0].GetExpiresAt())

	cases := []struct {
		name string
		req  *bbsv1.HeartbeatCellRequest
	}{
		{"no presence", &bbsv1.HeartbeatCellRequest{TtlSeconds: 10}},
		{"no ttl", &bbsv1.HeartbeatCellRequest{CellPresence: &modelsv1.CellPresence{
			CellId: "c", RepAddress: "127.0.0.1:1", Capacity: &modelsv1.CellCapacity{MemoryMb: 1, Containers: 1},
		}}},
		{"no rep address", &bbsv1.HeartbeatCellRequest{TtlSeconds: 10, CellPresence: &modelsv1.CellPresence{
			CellId: "c", Capacity: &modelsv1.CellCapacity{MemoryMb: 1, Containers: 1},
		}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.client.HeartbeatCell(h.ctx(), tc.req)
			requireCode(t, err, codes.InvalidArgument)
		})
	}

	_, err = h.client.RemoveCell(h.ctx(), &bbsv1.RemoveCellRequest{CellId: "cell-a"})
	require.NoError(t, err)
	resp, err = h.client.ListCells(h.ctx(), &bbsv1.ListCellsRequest{})
	require.NoError(t, err)
	require.Len(t, resp.GetCells(), 1)
	require.Equal(t, "cell-b", resp.GetCells()[0].GetCellId())

	clock.Advance(61 * time.Second) // registerCell's ttl is 60 s
	resp, err = h.client.ListCells(h.ctx(), &bbsv1.ListCellsRequest{})
	require.NoError(t, err)
	require.Empty(t, resp.GetCells(), "the presence expired")
}

func TestLockService(t *testing.T) {
	h := newHarness(t)
	acquire := func(owner string) (*bbsv1.AcquireLockResponse, error) {
		return h.client.AcquireLock(h.ctx(), &bbsv1.AcquireLockRequest{Key: "auctioneer", Owner: owner, Value: owner + ":9016", TtlSeconds: 15})
	}

	held, err := acquire("a")
	require.NoError(t, err)
	require.Equal(t, "a", held.GetLock().GetOwner())

	_, err = acquire("b")
	requireCode(t, err, codes.Aborted)

	renewed, err := acquire("a")
	require.NoError(t, err)
	require.Greater(t, renewed.GetLock().GetModifiedIndex(), held.GetLock().GetModifiedIndex())

	fetched, err := h.client.FetchLock(h.ctx(), &bbsv1.FetchLockRequest{Key: "auctioneer"})
	require.NoError(t, err)
	require.Equal(t, "a:9016", fetched.GetLock().GetValue())

	list, err := h.client.ListLocks(h.ctx(), &bbsv1.ListLocksRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetLocks(), 1)

	_, err = h.client.ReleaseLock(h.ctx(), &bbsv1.ReleaseLockRequest{Key: "auctioneer", Owner: "b"})
	require.Error(t, err, "only the owner releases")
	_, err = h.client.ReleaseLock(h.ctx(), &bbsv1.ReleaseLockRequest{Key: "auctioneer", Owner: "a"})
	require.NoError(t, err)
	_, err = h.client.FetchLock(h.ctx(), &bbsv1.FetchLockRequest{Key: "auctioneer"})
	requireCode(t, err, codes.NotFound)

	taken, err := acquire("b")
	require.NoError(t, err)
	require.Equal(t, "b", taken.GetLock().GetOwner())

	_, err = h.client.AcquireLock(h.ctx(), &bbsv1.AcquireLockRequest{Key: "k", Owner: "", TtlSeconds: 1})
	requireCode(t, err, codes.InvalidArgument)
}
