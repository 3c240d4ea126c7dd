package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
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

func eventsCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "events [--follow] [--after SEQ] [--cell CELL_ID]", GroupID: groupEvents, Args: exactArgs(),
		Short: "Print BBS events: stream new ones, or replay from a sequence number",
		Long: `Every event has a sequence number, increasing in commit order.
  --follow            stream events as they are committed, until interrupted
  --after N           replay the events after sequence N, then exit once caught up
                      (no new event for 500ms)
  --after N --follow  replay from N, then keep streaming
One of --follow and --after is required. With --follow, droverctl resubscribes
after the last sequence it printed when the stream breaks, so no event is lost or
repeated. If N is older than the BBS retains, the BBS answers ResyncRequired.`,
		Example: examples(
			"events --follow",
			"events --after 1200",
			"events --after 1200 --follow --cell cell-z1-0 --json | jq .data",
		),
	}
	follow := cmd.Flags().Bool("follow", false, "keep streaming new events until interrupted")
	after := &uint64Value{}
	cmd.Flags().Var(after, "after", "replay events after sequence number `SEQ`")
	cell := cmd.Flags().String("cell", "", "only instance events of the cell `CELL_ID` (desired LRP and task events always pass)")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		if !*follow && !after.set {
			return usagef("events needs --follow, --after SEQ, or both")
		}
		w := &eventWriter{s: s}
		f := &eventFollower{s: s, follow: *follow, cellID: *cell, write: w.write}
		if after.set {
			f.cursor, f.hasCursor = after.n, true
		}
		return f.run(ctx)
	})
	return cmd
}

// eventFollower streams events to write: with follow it resubscribes after the last
// event written whenever the stream breaks; without, it ends once caught up.
type eventFollower struct {
	s         *session
	follow    bool
	cellID    string
	cursor    uint64
	hasCursor bool
	write     func(*modelsv1.Event) error
}

// errCaughtUp ends a replay without --follow once no event came for CaughtUpAfter.
var errCaughtUp = errors.New("caught up")

// run streams until caught up (without follow), or until ctx ends (with follow).
func (f *eventFollower) run(ctx context.Context) error {
	c, err := f.s.bbs()
	if err != nil {
		return err
	}
	sub := client.Subscription{CellID: f.cellID, MinBackoff: minReconnectDelay, MaxBackoff: maxReconnectDelay,
		OnRetry: func(err error, after *uint64, wait time.Duration) {
			fmt.Fprintf(f.s.stderr, "droverctl: event stream ended (%s); resubscribing%s in %s\n",
				output.Printable(streamEndReason(err)), cursorText(after), wait.Round(time.Millisecond))
		}}
	if f.hasCursor {
		sub.After = &f.cursor
	}
	handle := f.write
	if !f.follow {
		// One subscription, until a quiet period of CaughtUpAfter.
		sub.Retryable = func(error) bool { return false }
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		quiet := time.AfterFunc(CaughtUpAfter, func() { cancel(errCaughtUp) })
		defer quiet.Stop()
		handle = func(e *modelsv1.Event) error {
			quiet.Reset(CaughtUpAfter)
			return f.write(e)
		}
	}
	err = client.Subscribe(ctx, c, sub, handle)
	switch {
	case errors.Is(context.Cause(ctx), errCaughtUp), errors.Is(err, client.ErrStreamEnded):
		return nil
	case f.follow && ctx.Err() != nil:
		return nil // interrupted: the normal end of --follow
	}
	return err
}

// cursorText names the sequence a resubscription resumes after.
func cursorText(after *uint64) string {
	if after == nil {
		return ""
	}
	return fmt.Sprintf(" after sequence %d", *after)
}

func streamEndReason(err error) string {
	if errors.Is(err, client.ErrStreamEnded) {
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
