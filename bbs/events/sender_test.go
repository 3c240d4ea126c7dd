package events

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// shortTimeout makes a send time out quickly; tests never assert on durations.
const shortTimeout = 20 * time.Millisecond

func event(seq uint64) *modelsv1.Event { return &modelsv1.Event{Sequence: seq} }

func TestSenderReturnsWhatSendReturns(t *testing.T) {
	boom := errors.New("boom")
	var got []uint64
	s := newSender(func(e *modelsv1.Event) error {
		got = append(got, e.GetSequence())
		if e.GetSequence() == 2 {
			return boom
		}
		return nil
	}, time.Minute)
	require.NoError(t, s.deliver(t.Context(), event(1)))
	require.ErrorIs(t, s.deliver(t.Context(), event(2)), boom)
	require.Nil(t, s.close(t.Context()), "nothing pending")
	require.Equal(t, []uint64{1, 2}, got)
}

func TestSenderGivesUpOnABlockedSendAndCollectsItLater(t *testing.T) {
	gate := make(chan error)
	s := newSender(func(*modelsv1.Event) error { return <-gate }, shortTimeout)
	require.ErrorIs(t, s.deliver(t.Context(), event(7)), errSendTimeout)

	closed := make(chan *modelsv1.Event, 1)
	go func() { closed <- s.close(t.Context()) }()
	gate <- nil // the subscriber reads again: the pending send completes
	select {
	case e := <-closed:
		require.Equal(t, uint64(7), e.GetSequence(), "the pending event was sent after all")
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return after the pending send completed")
	}
}

func TestSenderCloseReportsAFailedOrAbandonedPendingSend(t *testing.T) {
	t.Run("the pending send fails", func(t *testing.T) {
		gate := make(chan error, 1)
		s := newSender(func(*modelsv1.Event) error { return <-gate }, shortTimeout)
		require.ErrorIs(t, s.deliver(t.Context(), event(1)), errSendTimeout)
		gate <- errors.New("stream closed")
		require.Nil(t, s.close(t.Context()))
	})
	t.Run("ctx ends first", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		release := make(chan struct{})
		defer close(release)
		s := newSender(func(*modelsv1.Event) error { <-release; return nil }, shortTimeout)
		require.ErrorIs(t, s.deliver(ctx, event(1)), errSendTimeout)
		cancel()
		require.Nil(t, s.close(ctx), "close does not wait for a send once ctx ended")
	})
	t.Run("ctx ends during deliver", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		release := make(chan struct{})
		defer close(release)
		s := newSender(func(*modelsv1.Event) error { cancel(); <-release; return nil }, time.Minute)
		require.ErrorIs(t, s.deliver(ctx, event(1)), context.Canceled)
		require.Nil(t, s.close(ctx))
	})
}

func TestAdmissionCapsEachIdentity(t *testing.T) {
	a := newAdmission(2)
	releaseA1, err := a.admit("alice")
	require.NoError(t, err)
	releaseA2, err := a.admit("alice")
	require.NoError(t, err)

	_, err = a.admit("alice")
	var tooMany *TooManySubscribersError
	require.ErrorAs(t, err, &tooMany)
	require.Equal(t, TooManySubscribersError{Identity: "alice", Limit: 2}, *tooMany)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.Contains(t, err.Error(), `"alice" already has 2 open`)
	require.Contains(t, err.Error(), "max_subscribers_per_identity")

	releaseBob, err := a.admit("bob")
	require.NoError(t, err, "another identity has its own cap")
	releaseAnon, err := a.admit(AnonymousIdentity)
	require.NoError(t, err)

	releaseA1()
	releaseA1() // a second release changes nothing
	releaseA3, err := a.admit("alice")
	require.NoError(t, err, "a released place is free again")
	_, err = a.admit("alice")
	require.Error(t, err, "the double release did not free two places")

	for _, release := range []func(){releaseA2, releaseA3, releaseBob, releaseAnon} {
		release()
	}
	require.Empty(t, a.active, "nothing left behind")
}

func TestErrorsCrossGRPCAsRetryableOrRefused(t *testing.T) {
	slow := &SlowSubscriberError{Cursor: 42, Timeout: 30 * time.Second}
	st := status.Convert(slow)
	require.Equal(t, codes.Unavailable, st.Code())
	require.Equal(t, models.ErrTypeUnavailable, models.FromError(st.Err()).Type, "clients retry Unavailable")
	require.Contains(t, st.Message(), "last event sent was 42")
	require.Contains(t, st.Message(), "30s")

	anon := &TooManySubscribersError{Identity: AnonymousIdentity, Limit: 3}
	require.Contains(t, anon.Error(), "the anonymous caller already has 3 open")
}
