package client

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// EventSubscriber is the part of the BBS API that streams events: the Client, or a
// component's fake.
type EventSubscriber interface {
	Subscribe(ctx context.Context, in *bbsv1.SubscribeRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.SubscribeResponse], error)
}

// AfterSequenceHeader is the response header in which the BBS names, once it admitted a
// subscription, the sequence the subscription starts after: the request's cursor, or
// for a subscription without one the newest sequence committed at admission. State read
// after the header arrived is therefore no older than the stream's start.
const AfterSequenceHeader = "drover-after-sequence"

// ErrStreamEnded is what ended a subscription whose stream the BBS closed without an
// error (a replica shutting down): worth subscribing again.
var ErrStreamEnded = errors.New("event stream ended")

// Default waits between resubscriptions.
const (
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
)

// Subscription describes a resumable subscription to the BBS's events.
type Subscription struct {
	// After is the cursor: the stream starts with the event after this sequence. Nil
	// starts with the next event committed after the BBS admitted the subscription; the
	// BBS names that start (AfterSequenceHeader), and later subscriptions resume from it.
	After *uint64
	// CellID keeps only the instance events of this cell (desired LRP and task events
	// always pass).
	CellID string
	// MinBackoff and MaxBackoff bound the exponential wait (with jitter) between
	// resubscriptions (defaults DefaultMinBackoff and DefaultMaxBackoff). The wait
	// starts again from MinBackoff once a subscription delivers an event.
	MinBackoff, MaxBackoff time.Duration
	// Retryable reports whether a subscription that ended with err (never ResyncRequired,
	// which always ends Subscribe) is worth resubscribing. Nil: Retryable.
	Retryable func(err error) bool
	// OnSubscribed, when set, is called once the BBS admitted a subscription (its
	// response headers came), before its first event, with the request and the sequence
	// the subscription starts after: the request's cursor or, without one, the one the
	// BBS named (nil when it named none). What is read from the BBS after this call is
	// therefore no older than the events the subscription delivers.
	OnSubscribed func(req *bbsv1.SubscribeRequest, after *uint64)
	// OnRetry, when set, is called before every wait with what ended the subscription,
	// the cursor the next one resumes after (nil: none yet) and the wait.
	OnRetry func(err error, after *uint64, wait time.Duration)
}

// Retryable reports whether a subscription that ended with err is worth resubscribing:
// the BBS closed the stream (ErrStreamEnded) or is unavailable, which includes a
// subscriber disconnected for being slow (its message names the last sequence sent,
// the one Subscribe resumes after anyway).
func Retryable(err error) bool {
	return errors.Is(err, ErrStreamEnded) || models.FromError(err).Type == models.ErrTypeUnavailable
}

// IsResyncRequired reports whether err is the BBS's OUT_OF_RANGE (ResyncRequired): the
// cursor is older than the events the BBS retains, so the subscriber must re-read the
// state it keeps and subscribe without a cursor.
func IsResyncRequired(err error) bool {
	return err != nil && models.FromError(err).Type == models.ErrTypeResyncRequired
}

// Subscribe streams the events sub selects to handle, in commit order, and whenever a
// subscription ends retryably subscribes again after the last event handle took (before
// any, after the start of the first subscription admitted), so that none is lost or
// repeated, waiting an exponential backoff between attempts. It returns ctx's error once
// ctx ends, handle's error, the BBS's ResyncRequired error (see IsResyncRequired) as it
// came, or the first error sub.Retryable refuses.
func Subscribe(ctx context.Context, bbs EventSubscriber, sub Subscription, handle func(*modelsv1.Event) error) error {
	r := &resumer{bbs: bbs, sub: sub, handle: handle}
	if sub.After != nil {
		r.cursor = new(*sub.After)
	}
	retryable := sub.Retryable
	if retryable == nil {
		retryable = Retryable
	}
	wait := sub.newBackoff()
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		progressed, err := r.once(ctx)
		if progressed {
			wait.Reset()
		}
		var handlerErr *handlerError
		switch {
		case ctx.Err() != nil:
			return struct{}{}, backoff.Permanent(ctx.Err())
		case errors.As(err, &handlerErr):
			return struct{}{}, backoff.Permanent(handlerErr.err)
		case IsResyncRequired(err), !retryable(err):
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(wait), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, d time.Duration) {
		if sub.OnRetry != nil {
			sub.OnRetry(err, r.after(), d)
		}
	}))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// newBackoff is the exponential backoff between resubscriptions.
func (s Subscription) newBackoff() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{InitialInterval: s.MinBackoff, RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier: 2, MaxInterval: s.MaxBackoff}
	if b.InitialInterval <= 0 {
		b.InitialInterval = DefaultMinBackoff
	}
	if b.MaxInterval <= 0 {
		b.MaxInterval = DefaultMaxBackoff
	}
	b.MaxInterval = max(b.MaxInterval, b.InitialInterval)
	return b
}

// startSequence is the sequence the BBS named in the response headers of an admitted
// subscription (AfterSequenceHeader), if it named one.
func startSequence(header metadata.MD) (uint64, bool) {
	values := header.Get(AfterSequenceHeader)
	if len(values) != 1 {
		return 0, false
	}
	seq, err := strconv.ParseUint(values[0], 10, 64)
	return seq, err == nil
}

// resumer runs the subscriptions of one Subscribe call, keeping the cursor.
type resumer struct {
	bbs    EventSubscriber
	sub    Subscription
	handle func(*modelsv1.Event) error
	// cursor is the sequence of the last event handled, else the start of the first
	// admitted subscription (sub.After, or the one the BBS named); nil: none.
	cursor *uint64
}

// handlerError marks an error of the handler, which ends Subscribe as it is.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }

// after is a copy of the cursor.
func (r *resumer) after() *uint64 {
	if r.cursor == nil {
		return nil
	}
	return new(*r.cursor)
}

// once runs one subscription until it ends and reports whether any event arrived.
func (r *resumer) once(ctx context.Context) (progressed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := &bbsv1.SubscribeRequest{AfterSequence: r.after(), CellId: r.sub.CellID}
	stream, err := r.bbs.Subscribe(ctx, req)
	if err != nil {
		return false, err
	}
	// The headers come once the BBS admitted the subscription and fixed its start; a
	// refused one has none (its error comes from Recv, in Drain).
	if header, _ := stream.Header(); header != nil {
		if seq, ok := startSequence(header); ok && r.cursor == nil {
			r.cursor = new(seq) // a later subscription resumes there, losing nothing
		}
		if r.sub.OnSubscribed != nil {
			r.sub.OnSubscribed(req, r.after())
		}
	}
	err = Drain(stream, func(resp *bbsv1.SubscribeResponse) error {
		e := resp.GetEvent()
		if e == nil {
			return nil
		}
		progressed = true
		if err := r.handle(e); err != nil {
			return &handlerError{err: err}
		}
		r.cursor = new(e.GetSequence())
		return nil
	})
	if err == nil {
		err = ErrStreamEnded
	}
	return progressed, err
}
