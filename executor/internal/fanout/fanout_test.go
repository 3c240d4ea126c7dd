package fanout

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPublishReachesEverySubscriberAndNeverBlocks(t *testing.T) {
	var b Broker[int]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	roomy := b.Subscribe(ctx, 10)
	tight := b.Subscribe(ctx, 1)

	require.Zero(t, b.Publish(1))
	require.Equal(t, 1, b.Publish(2), "the full subscriber misses the second value")
	require.Equal(t, 1, <-roomy)
	require.Equal(t, 2, <-roomy)
	require.Equal(t, 1, <-tight)
}

func TestSubscriptionEndsWithItsContext(t *testing.T) {
	var b Broker[string]
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Subscribe(ctx, 1)
	cancel()
	_, open := <-ch
	require.False(t, open, "the channel is closed when ctx ends")
	require.Zero(t, b.Publish("after"), "a closed subscription is no longer offered values")
}
