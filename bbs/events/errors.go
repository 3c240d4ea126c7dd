package events

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
)

// TooManySubscribersError refuses a subscription because its identity already holds
// the maximum number of event streams. Over gRPC it is RESOURCE_EXHAUSTED (HTTP 429).
type TooManySubscribersError struct {
	Identity string
	Limit    int
}

func (e *TooManySubscribersError) Error() string {
	return fmt.Sprintf("too many event streams: %s already has %d open, the limit per identity (max_subscribers_per_identity)",
		identityName(e.Identity), e.Limit)
}

// GRPCStatus makes the error RESOURCE_EXHAUSTED over gRPC.
func (e *TooManySubscribersError) GRPCStatus() *status.Status {
	return status.New(codes.ResourceExhausted, e.Error())
}

// SlowSubscriberError ends a subscription whose subscriber did not take an event within
// the send timeout. Cursor is the sequence of the last event sent (or the cursor the
// subscription started after): subscribing again after it, or after the last sequence
// received, continues with no gap and no repeat. Over gRPC it is UNAVAILABLE
// (models.ErrTypeUnavailable), which the BBS's clients retry.
type SlowSubscriberError struct {
	Cursor  uint64
	Timeout time.Duration
}

func (e *SlowSubscriberError) Error() string {
	return fmt.Sprintf("event stream too slow: an event waited more than %s to be sent; the last event sent was %d, subscribe again after it",
		e.Timeout, e.Cursor)
}

// GRPCStatus makes the error UNAVAILABLE over gRPC, typed models.ErrTypeUnavailable.
func (e *SlowSubscriberError) GRPCStatus() *status.Status {
	return models.NewError(models.ErrTypeUnavailable, "%s", e.Error()).GRPCStatus()
}
