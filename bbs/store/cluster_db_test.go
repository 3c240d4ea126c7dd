package store_test

import (
	"sync"
	"testing"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

func TestDomainFreshness(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)

	require.NoError(t, s.UpsertDomain(ctx, "forever", 0))
	require.NoError(t, s.UpsertDomain(ctx, "short", 10*time.Second))
	require.NoError(t, s.UpsertDomain(ctx, "long", time.Minute))
	requireErrorType(t, s.UpsertDomain(ctx, "", time.Second), models.ErrTypeInvalidRequest)
	requireErrorType(t, s.UpsertDomain(ctx, "neg", -time.Second), models.ErrTypeInvalidRequest)

	tests := []struct {
		advance time.Duration
		want    []string
	}{
		{0, []string{"forever", "long", "short"}},
		{10 * time.Second, []string{"forever", "long"}},
		{time.Hour, []string{"forever"}},
	}
	for _, tt := range tests {
		clock.Advance(tt.advance)
		domains, err := s.ListFreshDomains(ctx)
		require.NoError(t, err)
		require.Equal(t, tt.want, domains)
	}

	// A refresh makes an expired domain fresh again; ttl 0 makes a short one permanent.
	require.NoError(t, s.UpsertDomain(ctx, "short", time.Minute))
	require.NoError(t, s.UpsertDomain(ctx, "long", 0))
	clock.Advance(24 * 365 * time.Hour)
	domains, err := s.ListFreshDomains(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"forever", "long"}, domains)
}

func newCell(id string) *modelsv1.CellPresence {
	return &modelsv1.CellPresence{
		CellId:     id,
		RepAddress: id + ".example:1800",
		Zone:       "z1",
		Capacity:   &modelsv1.CellCapacity{MemoryMb: 4096, DiskMb: 8192, Containers: 100},
		RootfsProviders: []*modelsv1.RootFSProvider{
			{Name: "preloaded", Properties: []string{"cflinuxfs4"}},
		},
		PlacementTags: []string{"blue"},
	}
}

func TestCellPresences(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)

	require.NoError(t, s.HeartbeatCell(ctx, newCell("cell-a"), 15*time.Second))
	require.NoError(t, s.HeartbeatCell(ctx, newCell("cell-b"), 30*time.Second))
	requireErrorType(t, s.HeartbeatCell(ctx, nil, time.Second), models.ErrTypeInvalidRequest)
	requireErrorType(t, s.HeartbeatCell(ctx, newCell("cell-c"), 0), models.ErrTypeInvalidRequest)

	got, err := s.GetCell(ctx, "cell-a")
	require.NoError(t, err)
	want := newCell("cell-a")
	want.ExpiresAt = clock.Now().Add(15 * time.Second).UnixNano()
	requireProtoEqual(t, want, got)

	cells, err := s.ListLiveCells(ctx)
	require.NoError(t, err)
	require.Len(t, cells, 2)

	clock.Advance(20 * time.Second)
	_, err = s.GetCell(ctx, "cell-a")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	cells, err = s.ListLiveCells(ctx)
	require.NoError(t, err)
	require.Len(t, cells, 1)
	require.Equal(t, "cell-b", cells[0].CellId)

	// A heartbeat revives an expired cell and replaces its presence.
	updated := newCell("cell-a")
	updated.Zone = "z2"
	require.NoError(t, s.HeartbeatCell(ctx, updated, 15*time.Second))
	got, err = s.GetCell(ctx, "cell-a")
	require.NoError(t, err)
	require.Equal(t, "z2", got.Zone)

	require.NoError(t, s.RemoveCell(ctx, "cell-a"))
	require.NoError(t, s.RemoveCell(ctx, "cell-a"), "removing an absent cell is fine")
	_, err = s.GetCell(ctx, "cell-a")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
}

func TestLocks(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)

	lock, err := s.AcquireLock(ctx, "auctioneer", "owner-1", "addr-1", 15*time.Second)
	require.NoError(t, err)
	require.Equal(t, "owner-1", lock.Owner)
	require.Equal(t, "addr-1", lock.Value)
	require.Equal(t, int64(1), lock.ModifiedIndex)
	require.Equal(t, clock.Now().Add(15*time.Second).UnixNano(), lock.ExpiresAt)

	_, err = s.AcquireLock(ctx, "auctioneer", "owner-2", "addr-2", 15*time.Second)
	requireErrorType(t, err, models.ErrTypeLockCollision)
	require.ErrorContains(t, err, "owner-1")

	clock.Advance(10 * time.Second)
	renewed, err := s.AcquireLock(ctx, "auctioneer", "owner-1", "addr-1b", 15*time.Second)
	require.NoError(t, err)
	require.Equal(t, int64(2), renewed.ModifiedIndex)
	require.Equal(t, "addr-1b", renewed.Value)
	require.Equal(t, clock.Now().Add(15*time.Second).UnixNano(), renewed.ExpiresAt)

	fetched, err := s.FetchLock(ctx, "auctioneer")
	require.NoError(t, err)
	requireProtoEqual(t, renewed, fetched)

	requireErrorType(t, s.ReleaseLock(ctx, "auctioneer", "owner-2"), models.ErrTypeLockCollision)

	// Expiry: the lock is free to fetch-as-missing and to take over.
	clock.Advance(16 * time.Second)
	_, err = s.FetchLock(ctx, "auctioneer")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	locks, err := s.ListLocks(ctx)
	require.NoError(t, err)
	require.Empty(t, locks)
	taken, err := s.AcquireLock(ctx, "auctioneer", "owner-2", "addr-2", 15*time.Second)
	require.NoError(t, err)
	require.Equal(t, "owner-2", taken.Owner)
	require.Equal(t, int64(3), taken.ModifiedIndex)

	_, err = s.AcquireLock(ctx, "converger", "owner-1", "", time.Minute)
	require.NoError(t, err)
	locks, err = s.ListLocks(ctx)
	require.NoError(t, err)
	require.Len(t, locks, 2)
	require.Equal(t, []string{"auctioneer", "converger"}, []string{locks[0].Key, locks[1].Key})

	require.NoError(t, s.ReleaseLock(ctx, "auctioneer", "owner-2"))
	_, err = s.FetchLock(ctx, "auctioneer")
	requireErrorType(t, err, models.ErrTypeResourceNotFound)
	requireErrorType(t, s.ReleaseLock(ctx, "auctioneer", "owner-2"), models.ErrTypeResourceNotFound)

	_, err = s.AcquireLock(ctx, "", "o", "", time.Second)
	requireErrorType(t, err, models.ErrTypeInvalidRequest)
	_, err = s.AcquireLock(ctx, "k", "o", "", 0)
	requireErrorType(t, err, models.ErrTypeInvalidRequest)
}

func TestLockContention(t *testing.T) {
	t.Parallel()
	s, _ := newStoreWithClock(t)
	ctx := testContext(t)
	const contenders = 8
	var wg sync.WaitGroup
	winners := make(chan string, contenders)
	errs := make(chan error, contenders)
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := "owner-" + string(rune('a'+i))
			if _, err := s.AcquireLock(ctx, "leader", owner, owner, time.Minute); err != nil {
				errs <- err
				return
			}
			winners <- owner
		}()
	}
	wg.Wait()
	close(winners)
	close(errs)
	var won []string
	for w := range winners {
		won = append(won, w)
	}
	require.Len(t, won, 1, "exactly one contender gets the lock")
	for err := range errs {
		requireErrorType(t, err, models.ErrTypeLockCollision)
	}
	held, err := s.FetchLock(ctx, "leader")
	require.NoError(t, err)
	require.Equal(t, won[0], held.Owner)
}
