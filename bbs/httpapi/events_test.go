package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/events"
	"drover.dev/bbs/httpapi"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// sseFrame is one blank-line-terminated block of an event stream.
type sseFrame struct {
	fields   map[string][]string
	comments []string
}

// sseStream reads frames from an open event stream.
type sseStream struct {
	resp   *http.Response
	reader *bufio.Reader
	cancel context.CancelFunc
}

// openEvents connects to /v1/events; the connection gives up after a deadline.
func (h *harness) openEvents(t *testing.T, query string, headers ...string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url+"/v1/events"+query, nil)
	require.NoError(t, err)
	for _, header := range headers {
		name, value, _ := strings.Cut(header, ":")
		req.Header.Set(name, strings.TrimSpace(value))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return &sseStream{resp: resp, reader: bufio.NewReader(resp.Body), cancel: cancel}
}

// next reads the next frame, or returns io.EOF once the server closed the stream.
func (s *sseStream) next() (sseFrame, error) {
	frame := sseFrame{fields: map[string][]string{}}
	for {
		line, err := s.reader.ReadString('\n')
		if err != nil {
			if line == "" && len(frame.fields) == 0 && len(frame.comments) == 0 {
				return frame, err
			}
			return frame, errors.New("stream ended inside a frame: " + line)
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return frame, nil
		}
		if comment, ok := strings.CutPrefix(line, ":"); ok {
			frame.comments = append(frame.comments, strings.TrimSpace(comment))
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		frame.fields[name] = append(frame.fields[name], strings.TrimPrefix(value, " "))
	}
}

// nextEvent skips keepalive frames and returns the next event frame.
func (s *sseStream) nextEvent(t *testing.T) sseFrame {
	t.Helper()
	for {
		frame, err := s.next()
		require.NoError(t, err)
		if len(frame.fields) > 0 {
			return frame
		}
	}
}

func retainedEvents() []*modelsv1.Event {
	lrp := &modelsv1.ActualLRP{ProcessGuid: "web", Index: 0, Domain: "cf", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED}
	return []*modelsv1.Event{
		{Sequence: 1, Payload: &modelsv1.Event_DesiredLrpCreated{DesiredLrpCreated: &modelsv1.DesiredLRPCreatedEvent{
			DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "web", Domain: "cf", Instances: 1, Annotation: "line one\nline two"}}}},
		{Sequence: 2, Payload: &modelsv1.Event_ActualLrpInstanceCreated{ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{ActualLrp: lrp}}},
		{Sequence: 3, Payload: &modelsv1.Event_TaskCreated{TaskCreated: &modelsv1.TaskCreatedEvent{
			Task: &modelsv1.Task{TaskGuid: "t", State: modelsv1.TaskState_TASK_STATE_PENDING}}}},
		{Sequence: 4, Payload: &modelsv1.Event_ActualLrpCrashed{ActualLrpCrashed: &modelsv1.ActualLRPCrashedEvent{
			ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "web"}, CrashCount: 1, CrashReason: "exit 1"}}},
	}
}

func TestEventStreamFramingAndResume(t *testing.T) {
	wantTypes := map[uint64]string{
		1: models.EventTypeDesiredLRPCreated,
		2: models.EventTypeActualLRPInstanceCreated,
		3: models.EventTypeTaskCreated,
		4: models.EventTypeActualLRPCrashed,
	}
	tests := []struct {
		name      string
		query     string
		headers   []string
		wantAfter uint64
		wantSeqs  []uint64
	}{
		{"Last-Event-ID", "", []string{"Last-Event-ID: 2"}, 2, []uint64{3, 4}},
		{"after parameter", "?after=0", nil, 0, []uint64{1, 2, 3, 4}},
		{"header wins over parameter", "?after=1", []string{"Last-Event-ID: 3"}, 3, []uint64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, httpapi.Options{}, func(f *fakes) { f.events.retained = retainedEvents() })
			stream := h.openEvents(t, tt.query, tt.headers...)
			require.Equal(t, http.StatusOK, stream.resp.StatusCode)
			require.Equal(t, "text/event-stream", stream.resp.Header.Get("Content-Type"))
			require.Equal(t, "no-cache", stream.resp.Header.Get("Cache-Control"))

			for _, seq := range tt.wantSeqs {
				frame := stream.nextEvent(t)
				require.Len(t, frame.fields["data"], 1, "one data line")
				require.Equal(t, []string{jsonNumber(seq)}, frame.fields["id"])
				require.Equal(t, []string{wantTypes[seq]}, frame.fields["event"])
				var event jsonapi.Event
				require.NoError(t, json.Unmarshal([]byte(frame.fields["data"][0]), &event))
				require.Equal(t, seq, event.Sequence)
				require.Equal(t, wantTypes[seq], event.Type)
				require.NotEmpty(t, event.Data)
			}
			req := lastCall[*subscribeRequest](t, &h.events.calls)
			require.NotNil(t, req.AfterSequence)
			require.Equal(t, tt.wantAfter, req.GetAfterSequence())

			stream.cancel()
			select {
			case <-h.events.ended:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream subscription did not end when the client left")
			}
		})
	}
}

func TestEventStreamKeepaliveAndCellFilter(t *testing.T) {
	h := newHarness(t, httpapi.Options{HeartbeatInterval: 20 * time.Millisecond}, func(f *fakes) {
		f.events.retained = retainedEvents()
	})
	stream := h.openEvents(t, "?cell_id=cell-7")
	frame, err := stream.next()
	require.NoError(t, err)
	require.Empty(t, frame.fields, "no cursor: only new events, none here")
	require.Equal(t, []string{"keepalive"}, frame.comments)

	req := lastCall[*subscribeRequest](t, &h.events.calls)
	require.Nil(t, req.AfterSequence)
	require.Equal(t, "cell-7", req.GetCellId())
}

func TestEventStreamResyncRequired(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, func(f *fakes) {
		f.events.retained = retainedEvents()
		f.events.oldest = 3
	})
	stream := h.openEvents(t, "", "Last-Event-ID: 1")
	require.Equal(t, http.StatusOK, stream.resp.StatusCode)
	frame := stream.nextEvent(t)
	require.Equal(t, []string{"resync_required"}, frame.fields["event"])
	require.Len(t, frame.fields["data"], 1)
	var body jsonapi.Error
	require.NoError(t, json.Unmarshal([]byte(frame.fields["data"][0]), &body))
	require.Equal(t, "ResyncRequired", body.Type)

	_, err := stream.next()
	require.ErrorIs(t, err, io.EOF, "the stream closes after resync_required")
}

func TestEventStreamRejectsBadCursors(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, nil)
	tests := []struct {
		name    string
		query   string
		headers []string
		mention string
	}{
		{"header", "", []string{"Last-Event-ID: abc"}, "Last-Event-ID"},
		{"negative parameter", "?after=-4", nil, "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := requireError(t, h.do(t, http.MethodGet, "/v1/events"+tt.query, "", tt.headers...), http.StatusBadRequest, "InvalidRequest")
			require.Contains(t, body.Message, tt.mention)
		})
	}
	require.Empty(t, h.events.all())
}

func jsonNumber(n uint64) string {
	out, _ := json.Marshal(n)
	return string(out)
}

func TestEventStreamOverTheCallersCapIs429(t *testing.T) {
	h := newHarness(t, httpapi.Options{}, func(f *fakes) {
		f.events.refuse = &events.TooManySubscribersError{Identity: events.AnonymousIdentity, Limit: 64}
	})
	body := requireError(t, h.do(t, http.MethodGet, "/v1/events", ""), http.StatusTooManyRequests, "ResourceExhausted")
	require.Contains(t, body.Message, "already has 64 open, the limit per identity (max_subscribers_per_identity)")
	require.Equal(t, []string{events.AnonymousIdentity}, <-h.events.identities, "the gateway names its caller (no certificate here)")
}

// bigEvents are n task_created events of about 8 KiB each, sequences 1..n.
func bigEvents(n int) []*modelsv1.Event {
	out := make([]*modelsv1.Event, 0, n)
	for i := range n {
		out = append(out, &modelsv1.Event{Sequence: uint64(i + 1), Payload: &modelsv1.Event_TaskCreated{TaskCreated: &modelsv1.TaskCreatedEvent{
			Task: &modelsv1.Task{TaskGuid: fmt.Sprintf("t-%d", i+1), State: modelsv1.TaskState_TASK_STATE_PENDING,
				TaskDefinition: &modelsv1.TaskDefinition{Annotation: strings.Repeat("a", 8<<10)}}}}})
	}
	return out
}

// completeIDs are the ids of the complete frames of a raw response, in order.
func completeIDs(t *testing.T, raw string) []uint64 {
	t.Helper()
	_, body, ok := strings.Cut(raw, "\r\n\r\n")
	require.True(t, ok, "no response headers in %.200q", raw)
	var ids []uint64
	frames := strings.Split(body, "\n\n")
	for _, frame := range frames[:len(frames)-1] { // the last one may be cut short
		for line := range strings.SplitSeq(frame, "\n") {
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				n, err := strconv.ParseUint(id, 10, 64)
				require.NoError(t, err)
				ids = append(ids, n)
			}
		}
	}
	return ids
}

func TestSlowEventStreamIsDisconnectedAndResumesWithNoGap(t *testing.T) {
	const total = 2000 // 16 MiB: more than the socket buffers hold
	tooSlow := make(chan struct{}, 1)
	h := newHarness(t, httpapi.Options{
		EventWriteTimeout:  300 * time.Millisecond,
		EventStreamTooSlow: func() { notify(tooSlow, struct{}{}) },
	}, func(f *fakes) { f.events.retained = bigEvents(total) })

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /v1/events?after=0 HTTP/1.1\r\nHost: bbs\r\n\r\n")
	require.NoError(t, err)
	select { // it never reads: a write misses its deadline
	case <-tooSlow:
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled stream was not disconnected")
	}
	select {
	case <-h.events.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream subscription did not end")
	}
	require.Contains(t, h.logs.String(), "event-stream-too-slow")

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	raw, err := io.ReadAll(conn) // what was in flight, then the end of the connection
	require.NoError(t, err)
	got := completeIDs(t, string(raw))
	require.NotEmpty(t, got)
	require.Less(t, len(got), total, "disconnected before the end")

	// A reader resumes after the last id it got, as EventSource does, and again should it
	// be too slow itself on a busy machine.
	deadline := time.Now().Add(time.Minute)
	for len(got) < total && time.Now().Before(deadline) {
		resumed := h.openEvents(t, "", "Last-Event-ID: "+strconv.FormatUint(got[len(got)-1], 10))
		for len(got) < total {
			frame, err := resumed.next()
			if err != nil {
				break
			}
			if ids := frame.fields["id"]; len(ids) == 1 {
				id, err := strconv.ParseUint(ids[0], 10, 64)
				require.NoError(t, err)
				got = append(got, id)
			}
		}
		resumed.cancel()
	}
	require.Len(t, got, total)
	for i, id := range got {
		require.Equal(t, uint64(i+1), id, "every event once, in order")
	}
}
