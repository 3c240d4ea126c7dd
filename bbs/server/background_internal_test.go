package server

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// droppedCount is how many side effects of pool were dropped for reason.
func (s *Server) droppedCount(pool, reason string) float64 {
	return testutil.ToFloat64(s.dropped.WithLabelValues(pool, reason))
}

// TestGoBackgroundForWaitsOnlyWhileTheRequestLives: with every slot taken, a side effect
// waits for one only as long as its request's context lives; then it is dropped and
// counted, and the caller goes on. A slot that frees up in time runs it.
func TestGoBackgroundForWaitsOnlyWhileTheRequestLives(t *testing.T) {
	s := New(Deps{})
	release := s.TakeBackgroundSlotsForTest()
	ran := make(chan struct{}, 2)
	record := func(context.Context) { ran <- struct{}{} }

	t.Run("the request ends while it waits", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			s.goBackgroundFor(ctx, s.backgroundSem, record)
		}()
		cancel()
		<-returned
		require.Equal(t, 1.0, s.droppedCount("background", dropRequestEnded))
	})

	t.Run("an ended request starts nothing on a full pool", func(t *testing.T) {
		s.goBackgroundFor(noWait, s.backgroundSem, record)
		require.Equal(t, 2.0, s.droppedCount("background", dropRequestEnded))
	})

	t.Run("a slot that frees up in time runs it", func(t *testing.T) {
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			s.goBackgroundFor(context.Background(), s.backgroundSem, record)
		}()
		release()
		<-returned
		<-ran
		s.Wait()
	})

	t.Run("an ended request still starts it on a free slot", func(t *testing.T) {
		s.goBackgroundFor(noWait, s.backgroundSem, record)
		<-ran
		s.Wait()
		require.Equal(t, 2.0, s.droppedCount("background", dropRequestEnded))
	})
	require.Empty(t, ran, "no dropped side effect ran")
}

// TestShutdownLetsSideEffectsFinishThenCancelsThem: Shutdown starts no side effect any
// more, lets those in flight finish while its context lives, then cancels them.
func TestShutdownLetsSideEffectsFinishThenCancelsThem(t *testing.T) {
	t.Run("in flight ones that finish in time are not cancelled", func(t *testing.T) {
		s := New(Deps{})
		finish := make(chan struct{})
		seen := make(chan error, 1)
		s.goBackgroundFor(context.Background(), s.callbackSem, func(ctx context.Context) {
			<-finish
			seen <- ctx.Err()
		})
		shutdown := make(chan error)
		go func() { shutdown <- s.Shutdown(context.Background()) }()
		<-s.stopping

		s.goBackgroundFor(context.Background(), s.backgroundSem, func(context.Context) { t.Error("started after Shutdown") })
		require.Equal(t, 1.0, s.droppedCount("background", dropShuttingDown))

		close(finish)
		require.NoError(t, <-shutdown)
		require.NoError(t, <-seen, "it ran to its end uncancelled")
		require.Error(t, s.ctx.Err(), "the side effects' context ends with Shutdown")
	})

	t.Run("in flight ones are cancelled when the grace ends", func(t *testing.T) {
		s := New(Deps{})
		seen := make(chan error, 1)
		s.goBackgroundFor(context.Background(), s.backgroundSem, func(ctx context.Context) {
			<-ctx.Done()
			seen <- ctx.Err()
		})
		grace, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, s.Shutdown(grace), context.Canceled)
		require.ErrorIs(t, <-seen, context.Canceled, "Shutdown returned after the side effect did")
	})

	t.Run("a side effect waiting for a slot is dropped", func(t *testing.T) {
		s := New(Deps{})
		s.TakeBackgroundSlotsForTest()
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			s.goBackgroundFor(context.Background(), s.backgroundSem, func(context.Context) { t.Error("started after Shutdown") })
		}()
		require.NoError(t, s.Shutdown(context.Background()))
		<-returned
		require.Equal(t, 1.0, s.droppedCount("background", dropShuttingDown))
	})
}
