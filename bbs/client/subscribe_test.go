package client_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/client"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// attempt scripts one subscription: the call fails with callErr, or the stream delivers
// events and then ends with err (nil: a clean end). start, when set, is the sequence the
// response headers name (a subscription without a cursor); refused sends no headers.
type attempt struct {
	callErr error
	events  []*modelsv1.Event
	err     error
	start   *uint64
	refused bool
}

// scriptedBBS serves the attempts in order; once they run out a subscription stays
// open, delivering nothing, until its context ends.
type scriptedBBS struct {
	mu       sync.Mutex
	attempts []attempt
	requests []*bbsv1.SubscribeRequest
}

func (b *scriptedBBS) Subscribe(ctx context.Context, in *bbsv1.SubscribeRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.SubscribeResponse], error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = append(b.requests, in)
	if len(b.attempts) == 0 {
		return &scriptedStream{ctx: ctx, hold: true}, nil
	}
	a := b.attempts[0]
	b.attempts = b.attempts[1:]
	if a.callErr != nil {
		return nil, a.callErr
	}
	return &scriptedStream{ctx: ctx, events: a.events, err: a.err, start: a.start, refused: a.refused}, nil
}

// cursors lists the after_sequence of every request (-1 for none).
func (b *scriptedBBS) cursors() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []int64{}
	for _, r := range b.requests {
		if r.AfterSequence == nil {
			out = append(out, -1)
		} else {
			out = append(out, int64(*r.AfterSequence))
		}
	}
	return out
}

type scriptedStream struct {
	grpc.ClientStream
	ctx     context.Context
	events  []*modelsv1.Event
	err     error
	hold    bool
	start   *uint64
	refused bool
}

// Header is what an admitted subscription's headers are: the start when scripted; none
// for a refused one (as grpc-go reports a stream that ended without headers).
func (s *scriptedStream) Header() (metadata.MD, error) {
	if s.refused {
		return nil, nil
	}
	md := metadata.MD{}
	if s.start != nil {
		md.Set(client.AfterSequenceHeader, strconv.FormatUint(*s.start, 10))
	}
	return md, nil
}

func (s *scriptedStream) Recv() (*bbsv1.SubscribeResponse, error) {
	if len(s.events) > 0 {
		e := s.events[0]
		s.events = s.events[1:]
		return &bbsv1.SubscribeResponse{Event: e}, nil
	}
	if s.hold {
		<-s.ctx.Done()
		return nil, status.FromContextError(s.ctx.Err()).Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	return nil, io.EOF
}

func events(from, to uint64) []*modelsv1.Event {
	var out []*modelsv1.Event
	for seq := from; seq <= to; seq++ {
		out = append(out, &modelsv1.Event{Sequence: seq})
	}
	return out
}

// collect subscribes until ctx ends or Subscribe returns, recording the sequences
// handled; stopAt cancels once that sequence is handled (0: never).
func collect(t *testing.T, bbs client.EventSubscriber, sub client.Subscription, stopAt uint64) ([]uint64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []uint64
	err := client.Subscribe(ctx, bbs, sub, func(e *modelsv1.Event) error {
		got = append(got, e.GetSequence())
		if e.GetSequence() == stopAt {
			cancel()
		}
		return nil
	})
	return got, err
}

var quick = client.Subscription{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

func TestSubscribeResumesAfterTheLastEventHandled(t *testing.T) {
	bbs := &scriptedBBS{attempts: []attempt{
		{events: events(1, 2), err: status.Error(codes.Unavailable, "bbs shutting down")},
		{callErr: status.Error(codes.Unavailable, "connection refused")},
		{events: append([]*modelsv1.Event{nil}, events(3, 3)...)}, // a response without an event is skipped; a clean end
		{events: events(4, 5), err: models.NewError(models.ErrTypeUnavailable, "event stream too slow: ... the last event sent was 5")},
		{events: events(6, 6)},
	}}
	var retries []string
	sub := quick
	sub.OnRetry = func(err error, after *uint64, _ time.Duration) {
		retries = append(retries, err.Error())
		require.NotNil(t, after, "resumes after a sequence")
	}
	got, err := collect(t, bbs, sub, 6)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, got, "none lost, none repeated")
	assert.Equal(t, []int64{-1, 2, 2, 3, 5}, bbs.cursors())
	require.Len(t, retries, 4)
	assert.Equal(t, client.ErrStreamEnded.Error(), retries[2])
}

func TestSubscribeStartsAfterTheGivenCursorAndPassesTheCell(t *testing.T) {
	bbs := &scriptedBBS{attempts: []attempt{{events: events(8, 9)}}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sub := quick
	sub.After, sub.CellID = new(uint64(7)), "cell-1"
	var opened []*bbsv1.SubscribeRequest
	sub.OnSubscribed = func(r *bbsv1.SubscribeRequest, after *uint64) {
		require.Equal(t, r.GetAfterSequence(), *after, "starts after the request's cursor")
		if opened = append(opened, r); len(opened) == 2 {
			cancel()
		}
	}
	var got []uint64
	err := client.Subscribe(ctx, bbs, sub, func(e *modelsv1.Event) error { got = append(got, e.GetSequence()); return nil })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []uint64{8, 9}, got)
	assert.Equal(t, []int64{7, 9}, bbs.cursors())
	require.Len(t, opened, 2)
	assert.Equal(t, "cell-1", opened[0].GetCellId())
	assert.Equal(t, "cell-1", opened[1].GetCellId())
}

// TestSubscribeWithoutCursorResumesFromTheStartTheBBSNamed: a subscription without a
// cursor learns from the headers where the BBS started it; one that ends before any
// event resumes there (not at the then newest event, which would lose those between).
// A refused subscription (no headers) is not reported as subscribed.
func TestSubscribeWithoutCursorResumesFromTheStartTheBBSNamed(t *testing.T) {
	bbs := &scriptedBBS{attempts: []attempt{
		{refused: true, err: status.Error(codes.Unavailable, "too busy")},
		{start: new(uint64(41)), err: status.Error(codes.Unavailable, "bbs shutting down")},
		{start: new(uint64(41)), events: events(42, 42)}, // the BBS names the cursor it was given
	}}
	var starts []*uint64
	sub := quick
	sub.OnSubscribed = func(_ *bbsv1.SubscribeRequest, after *uint64) { starts = append(starts, after) }
	got, err := collect(t, bbs, sub, 42)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []uint64{42}, got)
	assert.Equal(t, []int64{-1, -1, 41}, bbs.cursors(), "the second resubscription resumes after the first start")
	require.Len(t, starts, 2, "the refused subscription is not reported")
	assert.Equal(t, uint64(41), *starts[0])
	assert.Equal(t, uint64(41), *starts[1], "a resumed subscription starts after its cursor")
}

// TestSubscribeWithoutAStartNamed: a BBS that names no start leaves the cursor unset
// until the first event.
func TestSubscribeWithoutAStartNamed(t *testing.T) {
	bbs := &scriptedBBS{attempts: []attempt{{err: status.Error(codes.Unavailable, "down")}, {events: events(5, 5)}}}
	var starts []*uint64
	sub := quick
	sub.OnSubscribed = func(_ *bbsv1.SubscribeRequest, after *uint64) { starts = append(starts, after) }
	got, err := collect(t, bbs, sub, 5)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []uint64{5}, got)
	assert.Equal(t, []int64{-1, -1}, bbs.cursors())
	assert.Equal(t, []*uint64{nil, nil}, starts)
}

func TestSubscribeStopsAt(t *testing.T) {
	handlerErr := errors.New("stdout closed")
	tests := []struct {
		name     string
		attempts []attempt
		sub      func(*client.Subscription)
		handle   func(*modelsv1.Event) error
		check    func(t *testing.T, err error)
		requests int
	}{
		{
			name:     "OUT_OF_RANGE, returned as the BBS sent it",
			attempts: []attempt{{events: events(3, 3), err: status.Error(codes.OutOfRange, "resync required")}},
			check: func(t *testing.T, err error) {
				assert.True(t, client.IsResyncRequired(err))
				assert.Equal(t, codes.OutOfRange, status.Code(err))
			},
			requests: 1,
		},
		{
			name:     "ResyncRequired refusing the call, even when every error is retryable",
			attempts: []attempt{{callErr: models.ErrResyncRequired}},
			sub:      func(s *client.Subscription) { s.Retryable = func(error) bool { return true } },
			check: func(t *testing.T, err error) {
				assert.True(t, client.IsResyncRequired(err))
				assert.Equal(t, models.ErrResyncRequired, err)
			},
			requests: 1,
		},
		{
			name:     "an error the default rule does not retry",
			attempts: []attempt{{callErr: status.Error(codes.PermissionDenied, "not yours")}},
			check: func(t *testing.T, err error) {
				assert.Equal(t, codes.PermissionDenied, status.Code(err))
				assert.False(t, client.IsResyncRequired(err))
			},
			requests: 1,
		},
		{
			name:     "an error Retryable refuses",
			attempts: []attempt{{events: events(1, 1)}},
			sub:      func(s *client.Subscription) { s.Retryable = func(error) bool { return false } },
			check:    func(t *testing.T, err error) { assert.ErrorIs(t, err, client.ErrStreamEnded) },
			requests: 1,
		},
		{
			name:     "the handler's error, as it returned it",
			attempts: []attempt{{events: events(1, 2)}},
			handle:   func(*modelsv1.Event) error { return handlerErr },
			check:    func(t *testing.T, err error) { assert.Equal(t, handlerErr, err) },
			requests: 1,
		},
		{
			name: "nothing when retrying every error (the last one is the context's)",
			attempts: []attempt{{callErr: status.Error(codes.PermissionDenied, "not yours")},
				{callErr: status.Error(codes.Internal, "boom")}},
			sub:      func(s *client.Subscription) { s.Retryable = func(error) bool { return true } },
			check:    func(t *testing.T, err error) { assert.ErrorIs(t, err, context.Canceled) },
			requests: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bbs := &scriptedBBS{attempts: tt.attempts}
			sub := quick
			if tt.sub != nil {
				tt.sub(&sub)
			}
			handle := tt.handle
			if handle == nil {
				handle = func(*modelsv1.Event) error { return nil }
			}
			ctx := t.Context()
			if tt.requests > len(tt.attempts) {
				// The subscription after the script stays open: end it once it is there.
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				sub.OnSubscribed = func(*bbsv1.SubscribeRequest, *uint64) {
					if len(bbs.cursors()) == tt.requests {
						cancel()
					}
				}
			}
			err := client.Subscribe(ctx, bbs, sub, handle)
			require.Error(t, err)
			tt.check(t, err)
			assert.Len(t, bbs.cursors(), tt.requests)
		})
	}
}

// TestSubscribeBacksOffExponentiallyUntilAnEventArrives: the waits double (with jitter
// of ±50%) up to the maximum, and start again from the minimum after a subscription
// that delivered an event.
func TestSubscribeBacksOffExponentiallyUntilAnEventArrives(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "down")
	bbs := &scriptedBBS{attempts: []attempt{
		{callErr: unavailable}, {callErr: unavailable}, {callErr: unavailable}, {callErr: unavailable}, {callErr: unavailable},
		{events: events(1, 1), err: unavailable},
		{callErr: unavailable},
		{events: events(2, 2)},
	}}
	sub := client.Subscription{MinBackoff: time.Millisecond, MaxBackoff: 8 * time.Millisecond}
	var waits []time.Duration
	sub.OnRetry = func(_ error, _ *uint64, wait time.Duration) { waits = append(waits, wait) }
	_, err := collect(t, bbs, sub, 2)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, waits, 7)
	// The interval before jitter: 1, 2, 4, 8, 8 (the cap) ms; after the event 1 ms, then 2.
	for i, interval := range []time.Duration{1, 2, 4, 8, 8, 1, 2} {
		interval *= time.Millisecond
		assert.GreaterOrEqual(t, waits[i], interval/2, "wait %d", i)
		assert.LessOrEqual(t, waits[i], interval*3/2+time.Nanosecond, "wait %d", i)
	}
}

// TestSubscribeEndsWhileWaiting: a context that ends during the wait between two
// subscriptions ends Subscribe with its error.
func TestSubscribeEndsWhileWaiting(t *testing.T) {
	bbs := &scriptedBBS{attempts: []attempt{{callErr: status.Error(codes.Unavailable, "down")}}}
	ctx, cancel := context.WithCancel(t.Context())
	sub := client.Subscription{MinBackoff: time.Hour, MaxBackoff: time.Hour}
	sub.OnRetry = func(error, *uint64, time.Duration) { cancel() }
	err := client.Subscribe(ctx, bbs, sub, func(*modelsv1.Event) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []int64{-1}, bbs.cursors())
}

func TestRetryable(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{client.ErrStreamEnded, true},
		{status.Error(codes.Unavailable, "down"), true},
		{status.Error(codes.DeadlineExceeded, "slow"), true},
		{models.NewError(models.ErrTypeUnavailable, "event stream too slow"), true},
		{status.Error(codes.OutOfRange, "gone"), false},
		{status.Error(codes.PermissionDenied, "no"), false},
		{status.Error(codes.ResourceExhausted, "too many event streams"), false},
		{errors.New("other"), false},
	} {
		assert.Equal(t, tt.want, client.Retryable(tt.err), "%v", tt.err)
	}
}
