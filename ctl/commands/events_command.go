package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// CaughtUpAfter is how long "events --after" without --follow waits for another
// event before it decides it has caught up and exits.
const CaughtUpAfter = 500 * time.Millisecond

// Reconnect backoff of "events --follow" when the stream breaks.
const (
	minReconnectDelay = 250 * time.Millisecond
	maxReconnectDelay = 5 * time.Second
)

func eventsCommand() *command {
	return &command{
		name: "events", flagsUsage: "[--follow] [--after SEQ] [--cell CELL_ID]", group: groupEvents,
		summary: "Print BBS events: stream new ones, or replay from a sequence number",
		details: `Every event has a sequence number, increasing in commit order.
  --follow            stream events as they are committed, until interrupted
  --after N           replay the events after sequence N, then exit once caught up
                      (no new event for 500ms)
  --after N --follow  replay from N, then keep streaming
One of --follow and --after is required. With --follow, droverctl resubscribes
after the last sequence it printed when the stream breaks, so no event is lost or
repeated. If N is older than the BBS retains, the BBS answers ResyncRequired.`,
		examples: []string{
			"events --follow",
			"events --after 1200",
			"events --after 1200 --follow --cell cell-z1-0 --json | jq .data",
		},
		setup: func(fs *flag.FlagSet) action {
			follow := fs.Bool("follow", false, "keep streaming new events until interrupted")
			after := &uint64Value{}
			fs.Var(after, "after", "replay events after sequence number `SEQ`")
			cell := fs.String("cell", "", "only instance events of the cell `CELL_ID` (desired LRP and task events always pass)")
			return func(ctx context.Context, s *session, _ []string) error {
				if !*follow && !after.set {
					return usagef("events needs --follow, --after SEQ, or both")
				}
				w := &eventWriter{s: s}
				f := &eventFollower{s: s, follow: *follow, cellID: *cell, write: w.write}
				if after.set {
					f.cursor, f.hasCursor = after.n, true
				}
				return f.run(ctx)
			}
		},
	}
}

// eventFollower subscribes and resubscribes after the last event it handed to write.
type eventFollower struct {
	s         *session
	follow    bool
	cellID    string
	cursor    uint64
	hasCursor bool
	write     func(*modelsv1.Event) error
}

// run streams until caught up (without follow), or until ctx ends (with follow).
func (f *eventFollower) run(ctx context.Context) error {
	delay := minReconnectDelay
	for {
		progressed, err := f.subscribeOnce(ctx)
		switch {
		case f.follow && ctx.Err() != nil:
			return nil // interrupted: the normal end of --follow
		case !f.follow, err != nil && !retryable(err):
			return err
		}
		if progressed {
			delay = minReconnectDelay
		}
		fmt.Fprintf(f.s.stderr, "droverctl: event stream ended (%s); resubscribing%s in %s\n",
			output.Printable(streamEndReason(err)), f.cursorText(), delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, maxReconnectDelay)
	}
}

// subscribeOnce reads one subscription until it ends, reporting whether any event arrived.
// Without follow, a quiet period of CaughtUpAfter ends it successfully.
func (f *eventFollower) subscribeOnce(ctx context.Context) (progressed bool, err error) {
	c, err := f.s.bbs()
	if err != nil {
		return false, err
	}
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := &bbsv1.SubscribeRequest{CellId: f.cellID}
	if f.hasCursor {
		after := f.cursor
		req.AfterSequence = &after
	}
	stream, err := c.Subscribe(streamCtx, req)
	if err != nil {
		return false, err
	}
	received := make(chan *modelsv1.Event)
	failed := make(chan error, 1)
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				failed <- err
				return
			}
			select {
			case received <- resp.GetEvent():
			case <-streamCtx.Done():
				return
			}
		}
	}()
	var quiet <-chan time.Time // stays nil, never firing, with follow
	var timer *time.Timer
	if !f.follow {
		timer = time.NewTimer(CaughtUpAfter)
		defer timer.Stop()
		quiet = timer.C
	}
	for {
		select {
		case e := <-received:
			progressed = true
			if err := f.handle(e); err != nil {
				return progressed, err
			}
			if timer != nil {
				timer.Reset(CaughtUpAfter)
			}
		case err := <-failed:
			return progressed, endOfStream(err)
		case <-quiet:
			return progressed, nil
		}
	}
}

// handle writes an event and moves the cursor past it.
func (f *eventFollower) handle(e *modelsv1.Event) error {
	if e == nil {
		return nil
	}
	if err := f.write(e); err != nil {
		return err
	}
	f.cursor, f.hasCursor = e.GetSequence(), true
	return nil
}

func (f *eventFollower) cursorText() string {
	if !f.hasCursor {
		return ""
	}
	return fmt.Sprintf(" after sequence %d", f.cursor)
}

// endOfStream turns a clean end of stream into nil.
func endOfStream(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// retryable reports whether a broken stream is worth resubscribing: a clean end, or
// a BBS that went away. A lost cursor (ResyncRequired) or a refused request is not.
func retryable(err error) bool {
	return err == nil || models.FromError(err).Type == models.ErrTypeUnavailable
}

func streamEndReason(err error) string {
	if err == nil {
		return "closed by the bbs"
	}
	return models.FromError(err).Error()
}

// eventWriter prints events as text lines or JSON lines.
type eventWriter struct{ s *session }

func (w *eventWriter) write(e *modelsv1.Event) error {
	if !w.s.json() {
		_, err := fmt.Fprintln(w.s.stdout, output.EventLine(e))
		return err
	}
	view, err := jsonapi.EventView(e)
	if err != nil {
		return err
	}
	return w.s.jsonLine(view)
}
