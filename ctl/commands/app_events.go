package commands

import (
	"context"
	"errors"
	"fmt"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Bounds of the event history "app" reads back.
const (
	// recentEventWindow is how many of the newest BBS events are searched.
	recentEventWindow = 5000
	// recentEventLimit is how many matching events are kept (the newest).
	recentEventLimit = 20
)

// errHistoryRead ends a replay once the newest event known at its start arrived.
var errHistoryRead = errors.New("history read")

// recentEvents replays the newest window events the BBS retains and returns the last
// limit that match, oldest first: it learns the newest sequence from a subscription
// without a cursor (the BBS names it in the response headers), then replays from
// window events before it. When the start is older than the BBS retains, a window
// an eighth as large is tried once. Bounded by --timeout.
func (s *session) recentEvents(ctx context.Context, match func(*modelsv1.Event) bool, window uint64, limit int) ([]*modelsv1.Event, error) {
	c, err := s.bbs()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
	defer cancel()
	newest, err := newestSequence(ctx, c)
	if err != nil || newest == 0 {
		return nil, err
	}
	for {
		start := newest - min(window, newest)
		events, err := replay(ctx, c, start, newest, match, limit)
		if client.IsResyncRequired(err) && window > 8 {
			window /= 8
			continue
		}
		return events, err
	}
}

// newestSequence is the sequence a subscription without a cursor starts after.
func newestSequence(ctx context.Context, c *client.Client) (uint64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var newest *uint64
	err := client.Subscribe(ctx, c, client.Subscription{
		Retryable: func(error) bool { return false },
		OnSubscribed: func(_ *bbsv1.SubscribeRequest, after *uint64) {
			newest = after
			cancel(errHistoryRead)
		},
	}, func(*modelsv1.Event) error { return nil })
	if errors.Is(context.Cause(ctx), errHistoryRead) {
		if newest == nil {
			return 0, fmt.Errorf("the bbs did not name where its event stream starts")
		}
		return *newest, nil
	}
	return 0, err
}

// replay collects the last limit events after start up to newest that match.
func replay(ctx context.Context, c *client.Client, start, newest uint64, match func(*modelsv1.Event) bool, limit int) ([]*modelsv1.Event, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var kept []*modelsv1.Event
	err := client.Subscribe(ctx, c, client.Subscription{After: &start, Retryable: func(error) bool { return false }},
		func(e *modelsv1.Event) error {
			if e.GetSequence() > newest {
				cancel(errHistoryRead)
				return nil
			}
			if match(e) {
				kept = append(kept, e)
				if len(kept) > limit {
					kept = kept[1:]
				}
			}
			if e.GetSequence() == newest {
				cancel(errHistoryRead)
			}
			return nil
		})
	if errors.Is(context.Cause(ctx), errHistoryRead) {
		return kept, nil
	}
	return kept, err
}
