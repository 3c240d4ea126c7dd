package integration

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/devstack/devstacktest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestClusterState covers domains, locks and cells on two BBS replicas sharing one
// database: what one replica writes, the other one serves.
func TestClusterState(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{Replicas: 2})
	a0, a1 := newAPI(t, s, 0), newAPI(t, s, 1)
	c0, c1 := devstacktest.Client(t, s, 0), devstacktest.Client(t, s, 1)

	t.Run("domains", func(t *testing.T) {
		t.Parallel()
		maxAge := http.Header{"Cache-Control": {"max-age=2"}}
		put := time.Now()
		status, body := a0.do(http.MethodPut, "/v1/domains/d", nil, maxAge)
		require.Equal(t, http.StatusOK, status, string(body))
		status, body = a0.do(http.MethodPut, "/v1/domains/forever", nil, nil)
		require.Equal(t, http.StatusOK, status, string(body))

		require.Contains(t, a1.domains(), "d", "fresh right after the PUT")
		require.Contains(t, a1.domains(), "forever")
		require.Eventually(t, func() bool { return !slices.Contains(a1.domains(), "d") },
			10*time.Second, 50*time.Millisecond, "d stays fresh past its max-age")
		require.GreaterOrEqual(t, time.Since(put), 2*time.Second, "d expired before its max-age")
		require.Contains(t, a0.domains(), "forever", "a domain without max-age stays fresh")

		var e jsonapi.Error
		status, body = a0.do(http.MethodPut, "/v1/domains/d", nil, http.Header{"Cache-Control": {"max-age=soon"}})
		require.Equal(t, http.StatusBadRequest, status, string(body))
		require.NoError(t, json.Unmarshal(body, &e))
		require.Equal(t, "InvalidRequest", e.Type)
	})

	t.Run("locks", func(t *testing.T) {
		t.Parallel()
		const key, ttl = "auctioneer", 3
		acquire := func(c *client.Client, owner string) error {
			_, err := c.AcquireLock(callCtx(t), &bbsv1.AcquireLockRequest{Key: key, Owner: owner, Value: owner, TtlSeconds: ttl})
			return err
		}
		require.NoError(t, acquire(c0, "owner-a"))
		// While owner-a renews, owner-b on the other replica never gets the lock, for
		// longer than its TTL: each round (paced like require.Eventually's polls) renews
		// and contends once.
		rounds := time.NewTicker(100 * time.Millisecond)
		defer rounds.Stop()
		for until := time.Now().Add(ttl*time.Second + time.Second); time.Now().Before(until); <-rounds.C {
			require.NoError(t, acquire(c0, "owner-a"), "owner-a renews")
			err := acquire(c1, "owner-b")
			require.True(t, errors.Is(models.FromError(err), models.ErrLockCollision), "got %v", err)
		}
		lastRenewal := time.Now()
		require.NoError(t, acquire(c0, "owner-a"))
		held, err := c1.FetchLock(callCtx(t), &bbsv1.FetchLockRequest{Key: key})
		require.NoError(t, err)
		require.Equal(t, "owner-a", held.GetLock().GetOwner())

		// owner-a stops renewing: owner-b gets the lock once the TTL has run out.
		require.Eventually(t, func() bool { return acquire(c1, "owner-b") == nil },
			ttl*time.Second+3*time.Second, 50*time.Millisecond, "the lock did not pass to owner-b")
		require.GreaterOrEqual(t, time.Since(lastRenewal), ttl*time.Second, "the lock passed before its TTL")
		held, err = c0.FetchLock(callCtx(t), &bbsv1.FetchLockRequest{Key: key})
		require.NoError(t, err)
		require.Equal(t, "owner-b", held.GetLock().GetOwner())
		err = acquire(c0, "owner-a")
		require.True(t, errors.Is(models.FromError(err), models.ErrLockCollision), "got %v", err)
	})

	t.Run("cells", func(t *testing.T) {
		t.Parallel()
		const ttl = 2
		presence := &modelsv1.CellPresence{
			CellId:     "cell-1",
			RepAddress: "127.0.0.1:1800",
			Zone:       "z1",
			Capacity:   &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 4096, Containers: 10},
		}
		beat := time.Now()
		_, err := c0.HeartbeatCell(callCtx(t), &bbsv1.HeartbeatCellRequest{CellPresence: presence, TtlSeconds: ttl})
		require.NoError(t, err)
		cells := func() []string {
			resp, err := c1.ListCells(callCtx(t), &bbsv1.ListCellsRequest{})
			require.NoError(t, err)
			var ids []string
			for _, c := range resp.GetCells() {
				ids = append(ids, c.GetCellId())
			}
			return ids
		}
		require.Equal(t, []string{"cell-1"}, cells())
		var viaHTTP []jsonapi.Cell
		a1.expect(http.StatusOK, http.MethodGet, "/v1/cells", nil, &viaHTTP)
		require.Len(t, viaHTTP, 1)
		require.Eventually(t, func() bool { return len(cells()) == 0 },
			ttl*time.Second+3*time.Second, 50*time.Millisecond, "the cell outlived its TTL")
		require.GreaterOrEqual(t, time.Since(beat), ttl*time.Second, "the cell expired early")
	})
}
