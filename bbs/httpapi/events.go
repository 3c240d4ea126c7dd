package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"

	"drover.dev/bbs/events"
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
// Last-Event-ID header or ?after=N and filtered by ?cell_id=. Failures before the BBS
// admits the stream are JSON errors (429 over the caller's cap of streams); afterwards
// they end the stream with an event. Every write must complete within
// EventWriteTimeout: a client that stops reading is disconnected, and resumes with
// Last-Event-ID set to the last id it received.
func (a *api) streamEvents(w http.ResponseWriter, r *http.Request) error {
	req, err := subscribeRequest(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, events.IdentityMetadataKey, callerIdentity(r))
	stream, err := a.bbs.Subscribe(ctx, req)
	if err != nil {
		return err
	}
	if err := admitted(stream); err != nil {
		return err
	}

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	sse := &sseWriter{w: w, rc: rc, timeout: a.opts.EventWriteTimeout}
	if err := sse.open(); err != nil {
		a.streamFailed(err, req.AfterSequence)
		return nil
	}

	results := make(chan received)
	go receiveEvents(ctx, stream, results)
	heartbeat := time.NewTicker(a.opts.HeartbeatInterval)
	defer heartbeat.Stop()
	cursor := req.AfterSequence // the last id written
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
			if err = a.sendEvent(sse, res.resp); err == nil {
				seq := res.resp.GetEvent().GetSequence()
				cursor = &seq
			}
		}
		if err != nil {
			a.streamFailed(err, cursor)
			return nil
		}
	}
}

// streamFailed logs why writing to a client failed; one that missed the write deadline
// is counted as too slow.
func (a *api) streamFailed(err error, cursor *uint64) {
	last := "none"
	if cursor != nil {
		last = strconv.FormatUint(*cursor, 10)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		a.log.Info("event-stream-ended", "error", err.Error(), "last_event_id", last)
		return
	}
	a.log.Info("event-stream-too-slow", "timeout", a.opts.EventWriteTimeout.String(), "last_event_id", last)
	if a.opts.EventStreamTooSlow != nil {
		a.opts.EventStreamTooSlow()
	}
}

// admitted waits until the BBS admits the subscription (its response headers) and
// returns its refusal otherwise, such as RESOURCE_EXHAUSTED over the caller's cap.
func admitted(stream bbsv1.EventService_SubscribeClient) error {
	if header, _ := stream.Header(); header != nil {
		return nil
	}
	_, err := stream.Recv() // no headers: the call ended, and Recv says how
	if errors.Is(err, io.EOF) {
		return models.NewError(models.ErrTypeUnavailable, "the BBS ended the event stream before it opened")
	}
	return err
}

// callerIdentity is who an event stream counts against: the common name of the
// client certificate, or events.AnonymousIdentity without one.
func callerIdentity(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return events.AnonymousIdentity
	}
	return r.TLS.PeerCertificates[0].Subject.CommonName
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

// sseWriter writes Server-Sent Events frames and flushes each one, each write and
// flush within timeout.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// open sends the response headers.
func (s *sseWriter) open() error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil {
		return err
	}
	s.w.WriteHeader(http.StatusOK)
	return s.rc.Flush()
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
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil {
		return err
	}
	if _, err := io.WriteString(s.w, frame); err != nil {
		return err
	}
	return s.rc.Flush()
}
