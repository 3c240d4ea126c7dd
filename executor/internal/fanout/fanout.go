// Package fanout delivers values to every subscriber without ever blocking the
// publisher: a subscriber whose buffer is full misses the value.
package fanout

import (
	"context"
	"sync"
)

// Broker fans values of type T out to its subscribers. The zero value is ready to use.
type Broker[T any] struct {
	mu   sync.Mutex
	subs map[chan T]struct{}
}

// Subscribe returns a channel with the given buffer that receives every value published
// until ctx ends; then it is closed.
func (b *Broker[T]) Subscribe(ctx context.Context, buffer int) <-chan T {
	ch := make(chan T, buffer)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[chan T]struct{}{}
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
		close(ch)
	})
	return ch
}

// Publish offers v to every subscriber and returns how many missed it (full buffers).
func (b *Broker[T]) Publish(v T) (missed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- v:
		default:
			missed++
		}
	}
	return missed
}
