// Package logbuf keeps the recent output lines of one container in a bounded ring and
// streams them to followers. Writers split process output into lines tagged with a source
// and a stream.
package logbuf

import (
	"context"
	"sync"

	"drover.dev/executor"
)

// DefaultCapacity is the number of lines kept when New is given zero or less.
const DefaultCapacity = 1000

// Buffer is a bounded ring of log lines with followers. It is safe for concurrent use.
type Buffer struct {
	mu     sync.Mutex
	lines  []executor.LogLine // ring storage, len == capacity once full
	cap    int
	next   uint64        // sequence number of the next appended line
	wake   chan struct{} // closed and replaced on every append or close
	closed bool
}

// New returns an empty buffer that keeps at most capacity lines.
func New(capacity int) *Buffer {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Buffer{cap: capacity, wake: make(chan struct{})}
}

// Append keeps a line, dropping the oldest when full, and wakes followers.
// Appending to a closed buffer does nothing.
func (b *Buffer) Append(line executor.LogLine) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if len(b.lines) < b.cap {
		b.lines = append(b.lines, line)
	} else {
		b.lines[b.next%uint64(b.cap)] = line
	}
	b.next++
	close(b.wake)
	b.wake = make(chan struct{})
}

// Close ends every follower; later appends are dropped.
func (b *Buffer) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.wake)
}

// Lines returns the kept lines, oldest first; tail > 0 keeps only the last tail lines.
func (b *Buffer) Lines(tail int) []executor.LogLine {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines, _, _, _ := b.since(b.startFor(tail))
	return lines
}

// startFor is the sequence number of the first line a reader asking for tail lines gets.
// b.mu must be held.
func (b *Buffer) startFor(tail int) uint64 {
	first := b.first()
	if tail > 0 && b.next-first > uint64(tail) {
		return b.next - uint64(tail)
	}
	return first
}

// first is the sequence number of the oldest kept line. b.mu must be held.
func (b *Buffer) first() uint64 {
	if b.next > uint64(b.cap) {
		return b.next - uint64(b.cap)
	}
	return 0
}

// since copies the lines from sequence number from on (moved up to the oldest kept one)
// and returns them with the next sequence number, the wake channel and whether the
// buffer is closed. b.mu must be held.
func (b *Buffer) since(from uint64) ([]executor.LogLine, uint64, <-chan struct{}, bool) {
	if first := b.first(); from < first {
		from = first
	}
	out := make([]executor.LogLine, 0, b.next-from)
	for seq := from; seq < b.next; seq++ {
		out = append(out, b.lines[seq%uint64(b.cap)])
	}
	return out, b.next, b.wake, b.closed
}

// Subscribe sends the kept lines (the last tail when tail > 0) and, with follow, every
// later line until ctx ends or the buffer is closed. The channel is closed at the end.
// A follower slower than the ring loses the lines that were overwritten.
func (b *Buffer) Subscribe(ctx context.Context, tail int, follow bool) <-chan executor.LogLine {
	out := make(chan executor.LogLine, 64)
	b.mu.Lock()
	cursor := b.startFor(tail)
	b.mu.Unlock()
	go func() {
		defer close(out)
		for {
			b.mu.Lock()
			lines, next, wake, closed := b.since(cursor)
			b.mu.Unlock()
			cursor = next
			for _, l := range lines {
				select {
				case out <- l:
				case <-ctx.Done():
					return
				}
			}
			if !follow || closed {
				return
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
