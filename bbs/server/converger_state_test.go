package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"drover.dev/bbs/store"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// firstSnapshotMessage takes a snapshot through the API and returns its first message.
func (h *harness) firstSnapshotMessage() *bbsv1.SnapshotResponse {
	h.t.Helper()
	stream, err := h.client.ConvergenceServiceClient.Snapshot(h.ctx(), &bbsv1.SnapshotRequest{})
	require.NoError(h.t, err)
	first, err := stream.Recv()
	require.NoError(h.t, err)
	return first
}

func TestConvergerStatus(t *testing.T) {
	h := newHarness(t)
	convergence := h.client.ConvergenceServiceClient
	status := func() *bbsv1.GetConvergerStatusResponse {
		t.Helper()
		resp, err := convergence.GetConvergerStatus(h.ctx(), &bbsv1.GetConvergerStatusRequest{})
		require.NoError(t, err)
		return resp
	}
	require.False(t, status().GetPaused())
	require.Nil(t, status().GetLastPass())
	require.Empty(t, status().GetLockOwner())

	t.Run("pause and resume", func(t *testing.T) {
		resp, err := convergence.SetConvergerPaused(h.ctx(), &bbsv1.SetConvergerPausedRequest{Paused: true, Reason: "restore"})
		require.NoError(t, err)
		require.True(t, resp.GetStatus().GetPaused())
		require.Equal(t, "restore", resp.GetStatus().GetPausedReason())
		require.NotZero(t, resp.GetStatus().GetChangedAt())
		require.True(t, status().GetPaused())
		require.True(t, h.firstSnapshotMessage().GetPaused(), "the snapshot carries the flag")

		resp, err = convergence.SetConvergerPaused(h.ctx(), &bbsv1.SetConvergerPausedRequest{})
		require.NoError(t, err)
		require.False(t, resp.GetStatus().GetPaused())
		require.False(t, h.firstSnapshotMessage().GetPaused())
	})

	t.Run("pass reports", func(t *testing.T) {
		_, err := convergence.ReportConvergencePass(h.ctx(), &bbsv1.ReportConvergencePassRequest{})
		requireCode(t, err, codes.InvalidArgument)
		require.ErrorContains(t, err, "pass")

		pass := &bbsv1.ConvergencePass{Owner: "converger-1", TakenAt: 7, Missing: 2, ActionsApplied: 2}
		_, err = convergence.ReportConvergencePass(h.ctx(), &bbsv1.ReportConvergencePassRequest{Pass: pass})
		require.NoError(t, err)
		require.Equal(t, int32(2), status().GetLastPass().GetMissing())
		require.Equal(t, "converger-1", status().GetLastPass().GetOwner())
	})

	t.Run("lock owner", func(t *testing.T) {
		_, err := h.client.AcquireLock(h.ctx(), &bbsv1.AcquireLockRequest{Key: store.ConvergerLockKey, Owner: "converger-1", TtlSeconds: 60})
		require.NoError(t, err)
		require.Equal(t, "converger-1", status().GetLockOwner())
	})
}
