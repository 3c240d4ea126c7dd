package store_test

import (
	"testing"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	"github.com/stretchr/testify/require"
)

func TestConvergerPauseRoundTrip(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)

	status, err := s.GetConvergerStatus(ctx)
	require.NoError(t, err)
	requireProtoEqual(t, &bbsv1.GetConvergerStatusResponse{}, status)
	require.False(t, snapshotMessages(t, s)[0].GetPaused())

	clock.Advance(time.Minute)
	paused, err := s.SetConvergerPaused(ctx, true, "restoring desired state")
	require.NoError(t, err)
	want := &bbsv1.GetConvergerStatusResponse{Paused: true, PausedReason: "restoring desired state", ChangedAt: clock.Now().UnixNano()}
	requireProtoEqual(t, want, paused)
	status, err = s.GetConvergerStatus(ctx)
	require.NoError(t, err)
	requireProtoEqual(t, want, status)

	desire(t, s, newDesiredLRP("app", 1))
	msgs := snapshotMessages(t, s)
	require.True(t, msgs[0].GetPaused(), "the first snapshot message carries the flag")
	for _, m := range msgs[1:] {
		require.False(t, m.GetPaused(), "only the first message carries the flag")
	}

	clock.Advance(time.Minute)
	resumed, err := s.SetConvergerPaused(ctx, false, "")
	require.NoError(t, err)
	requireProtoEqual(t, &bbsv1.GetConvergerStatusResponse{ChangedAt: clock.Now().UnixNano()}, resumed)
	require.False(t, snapshotMessages(t, s)[0].GetPaused())
}

func TestConvergencePassReportRoundTrip(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)

	requireErrorType(t, s.ReportConvergencePass(ctx, nil), models.ErrTypeInvalidRequest)

	first := &bbsv1.ConvergencePass{Owner: "converger-1", TakenAt: 42, SnapshotNanos: 1000, Missing: 3,
		FreshDomains: []string{"cf-apps"}, ActionsApplied: 3}
	require.NoError(t, s.ReportConvergencePass(ctx, first))
	status, err := s.GetConvergerStatus(ctx)
	require.NoError(t, err)
	requireProtoEqual(t, first, status.GetLastPass())

	second := &bbsv1.ConvergencePass{Owner: "converger-1", TakenAt: 43, Error: "snapshot failed"}
	require.NoError(t, s.ReportConvergencePass(ctx, second))
	status, err = s.GetConvergerStatus(ctx)
	require.NoError(t, err)
	requireProtoEqual(t, second, status.GetLastPass())

	paused, err := s.SetConvergerPaused(ctx, true, "incident")
	require.NoError(t, err)
	requireProtoEqual(t, second, paused.GetLastPass()) // pausing keeps the last pass
}

func TestConvergerStatusLockOwner(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)

	owner := func() string {
		t.Helper()
		status, err := s.GetConvergerStatus(ctx)
		require.NoError(t, err)
		return status.GetLockOwner()
	}
	require.Empty(t, owner())

	_, err := s.AcquireLock(ctx, "auctioneer", "auctioneer-1", "", time.Minute)
	require.NoError(t, err)
	require.Empty(t, owner(), "another lock is not the converger's")

	_, err = s.AcquireLock(ctx, store.ConvergerLockKey, "converger-1", "", 15*time.Second)
	require.NoError(t, err)
	require.Equal(t, "converger-1", owner())

	clock.Advance(15 * time.Second)
	require.Empty(t, owner(), "an expired lock has no owner")

	_, err = s.AcquireLock(ctx, store.ConvergerLockKey, "converger-2", "", 15*time.Second)
	require.NoError(t, err)
	require.Equal(t, "converger-2", owner())
	require.NoError(t, s.ReleaseLock(ctx, store.ConvergerLockKey, "converger-2"))
	require.Empty(t, owner())
}
