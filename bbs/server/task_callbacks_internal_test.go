package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetryCallback(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	notAccepted := fmt.Errorf("%w: status 503", errCallbackNotAccepted)
	tests := []struct {
		name     string
		results  []error // what each post returns; the last one repeats
		want     error
		attempts int
		retries  []int // the attempts notify is told about
	}{
		{"accepted at once", []error{nil}, nil, 1, nil},
		{"connection errors, three attempts", []error{refused}, refused, 3, []int{1, 2}},
		{"accepted at the second attempt", []error{refused, nil}, nil, 2, []int{1}},
		{"503 is not retried", []error{notAccepted}, notAccepted, 1, nil},
		{"503 after a connection error", []error{refused, notAccepted}, notAccepted, 2, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempts := 0
			post := func() error {
				attempts++
				return tt.results[min(attempts, len(tt.results))-1]
			}
			var retries []int
			var waits []time.Duration
			err := retryCallback(t.Context(), backoff.NewConstantBackOff(time.Millisecond), post, func(attempt int, err error, wait time.Duration) {
				retries = append(retries, attempt)
				waits = append(waits, wait)
				assert.Error(t, err)
			})
			assert.Equal(t, tt.want, err)
			assert.Equal(t, tt.attempts, attempts)
			assert.Equal(t, tt.retries, retries)
			for _, w := range waits {
				assert.Equal(t, time.Millisecond, w, "the backoff's wait separates the attempts")
			}
		})
	}
}

func TestRetryCallbackStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	attempts := 0
	err := retryCallback(ctx, backoff.NewConstantBackOff(time.Hour), func() error {
		attempts++
		return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}, func(int, error, time.Duration) { cancel() })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, attempts)
}

// TestCallbackBackoffWaits: the waits between attempts are exponential with jitter
// within their bounds, never zero.
func TestCallbackBackoffWaits(t *testing.T) {
	b := callbackBackoff()
	for _, interval := range []time.Duration{minCallbackRetryWait, 2 * minCallbackRetryWait, 4 * minCallbackRetryWait, maxCallbackRetryWait, maxCallbackRetryWait} {
		wait := b.NextBackOff()
		assert.GreaterOrEqual(t, wait, interval/2)
		assert.LessOrEqual(t, wait, interval*3/2+time.Nanosecond)
	}
}
