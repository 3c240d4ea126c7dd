package events

import (
	"context"
	"errors"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// errSendTimeout is a send that did not return within the send timeout.
var errSendTimeout = errors.New("events: send timed out")

// sender calls a subscriber's send function on a goroutine of its own, so that the hub
// can give up on a send that blocks (a subscriber that stopped reading) after a timeout
// instead of being stuck in it, holding its page.
type sender struct {
	send    func(*modelsv1.Event) error
	timeout time.Duration
	timer   *time.Timer
	next    chan *modelsv1.Event
	// results is buffered so that the goroutine never blocks on it, even when nobody
	// waits any more.
	results chan error
	// pending is the event handed to send whose result was not collected.
	pending *modelsv1.Event
}

func newSender(send func(*modelsv1.Event) error, timeout time.Duration) *sender {
	s := &sender{
		send:    send,
		timeout: timeout,
		timer:   time.NewTimer(timeout),
		next:    make(chan *modelsv1.Event),
		results: make(chan error, 1),
	}
	s.timer.Stop()
	go s.run()
	return s
}

func (s *sender) run() {
	for e := range s.next {
		s.results <- s.send(e)
	}
}

// deliver hands e to send and waits for it: send's error, ctx.Err() when ctx ends first,
// or errSendTimeout when send takes longer than the timeout. In the last two cases the
// send is still pending; call close next.
func (s *sender) deliver(ctx context.Context, e *modelsv1.Event) error {
	s.next <- e // the goroutine is idle: the previous result was collected
	s.pending = e
	s.timer.Reset(s.timeout)
	defer s.timer.Stop()
	select {
	case err := <-s.results:
		s.pending = nil
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.timer.C:
		return errSendTimeout
	}
}

// close waits, until ctx ends, for a pending send to return, and stops the goroutine
// (once that send returned). It returns the pending event if its send completed without
// error, nil otherwise.
func (s *sender) close(ctx context.Context) (completed *modelsv1.Event) {
	defer close(s.next)
	if s.pending == nil {
		return nil
	}
	select {
	case err := <-s.results:
		if err == nil {
			return s.pending
		}
	case <-ctx.Done():
	}
	return nil
}
