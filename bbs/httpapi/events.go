package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// resyncEvent is the SSE event name that tells a subscriber its cursor is too old.
const resyncEvent = "resync_required"

// errorEvent is the SSE event name of any other failure that ends a stream.
const errorEvent = "error"

// received is one result of stream.Recv.
type received struct {
	resp *bbsv1.SubscribeResponse
	err  error
}

// streamEvents handles GET /v1/events as Server-Sent Events, resuming after the
// Last-Event-ID header or ?after=N and filtered by ?cell_id=. Failures before the
// stream opens are JSON errors; afterwards they end the stream with an event.
func (a *api) streamEvents(w http.ResponseWriter, r *http.Request) error {
	req, err := subscribeRequest(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stream, err := a.bbs.Subscribe(ctx, req)
	if err != nil {
		return err
	}

	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives any server write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: w, rc: rc}
	if err := sse.flush(); err != nil {
		a.log.Error("failed-to-open-event-stream", "error", err.Error())
		return nil
	}

	results := make(chan received)
	go receiveEvents(ctx, stream, results)
	heartbeat := time.NewTicker(a.opts.HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			err = sse.comment("keepalive")
		case res := <-results:
			if res.err != nil {
				a.endStream(ctx, sse, res.err)
				return nil
			}
			err = a.sendEvent(sse, res.resp)
		}
		if err != nil {
			a.log.Info("event-stream-ended", "error", err.Error())
			return nil
		}
	}
}

// receiveEvents forwards stream results until an error (io.EOF included) or ctx ends.
func receiveEvents(ctx context.Context, stream bbsv1.EventService_SubscribeClient, out chan<- received) {
	for {
		resp, err := stream.Recv()
		select {
		case out <- received{resp: resp, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// sendEvent writes one event as id, event and data lines.
func (a *api) sendEvent(sse *sseWriter, resp *bbsv1.SubscribeResponse) error {
	view, err := jsonapi.EventView(resp.GetEvent())
	if err != nil {
		a.log.Error("failed-to-encode-event", "error", err.Error())
		if werr := sse.event("", errorEvent, errorBody(models.ErrTypeUnknown, err.Error())); werr != nil {
			return werr
		}
		return err
	}
	return sse.event(strconv.FormatUint(view.Sequence, 10), view.Type, view)
}

// endStream reports why the upstream stream stopped, unless the client left or the
// BBS ended it cleanly.
func (a *api) endStream(ctx context.Context, sse *sseWriter, err error) {
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return
	}
	body := jsonapi.ErrorView(err)
	name := errorEvent
	if body.Type == string(models.ErrTypeResyncRequired) {
		name = resyncEvent
	} else {
		a.log.Error("event-subscription-failed", "error", err.Error())
	}
	_ = sse.event("", name, body)
}

// subscribeRequest builds the subscription from the Last-Event-ID header, or else the
// after parameter, and the cell_id parameter.
func subscribeRequest(r *http.Request) (*bbsv1.SubscribeRequest, error) {
	req := &bbsv1.SubscribeRequest{CellId: r.URL.Query().Get("cell_id")}
	cursor, source := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if cursor == "" {
		cursor, source = r.URL.Query().Get("after"), "after"
	}
	if cursor == "" {
		return req, nil
	}
	after, err := strconv.ParseUint(cursor, 10, 64)
	if err != nil {
		return nil, models.NewError(models.ErrTypeInvalidRequest, "%s %q is not an event sequence number", source, cursor)
	}
	req.AfterSequence = &after
	return req, nil
}

// sseWriter writes Server-Sent Events frames and flushes each one.
type sseWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

// event writes one frame; data is JSON-encoded on a single line. Empty id or name
// lines are left out (an unnamed event is a "message" to SSE clients).
func (s *sseWriter) event(id, name string, data any) error {
	payload, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding %s event: %w", name, err)
	}
	frame := ""
	if id != "" {
		frame += "id: " + id + "\n"
	}
	if name != "" {
		frame += "event: " + name + "\n"
	}
	frame += "data: " + string(payload) + "\n\n"
	return s.write(frame)
}

// comment writes an SSE comment line, which clients ignore.
func (s *sseWriter) comment(text string) error {
	return s.write(": " + text + "\n\n")
}

func (s *sseWriter) write(frame string) error {
	if _, err := io.WriteString(s.w, frame); err != nil {
		return err
	}
	return s.flush()
}

func (s *sseWriter) flush() error { return s.rc.Flush() }
