package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sseEvent is one Server-Sent Events frame of GET /v1/events.
type sseEvent struct {
	ID    uint64
	Event string
	Data  json.RawMessage
}

// streamSSE opens GET /v1/events with Last-Event-ID: after and sends every frame with
// an id on the returned channel until ctx ends or the stream breaks (then it closes).
func streamSSE(ctx context.Context, t *testing.T, a *api, after uint64) <-chan sseEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	req.Header.Set("Accept", "text/event-stream")
	resp, err := a.client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
	out := make(chan sseEvent)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		scanner := bufio.NewScanner(resp.Body)
		scanner.Buffer(make([]byte, 0, 64<<10), 16<<20)
		var frame sseEvent
		hasID := false
		for scanner.Scan() {
			line := scanner.Text()
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch {
			case line == "":
				if hasID {
					select {
					case out <- frame:
					case <-ctx.Done():
						return
					}
				}
				frame, hasID = sseEvent{}, false
			case field == "id":
				id, err := strconv.ParseUint(value, 10, 64)
				if err != nil {
					// Passed on so that the comparison with the gRPC stream fails.
					frame.Event = fmt.Sprintf("malformed id %q", value)
				}
				frame.ID, hasID = id, true
			case field == "event":
				frame.Event = value
			case field == "data":
				frame.Data = append(frame.Data, value...)
			}
		}
	}()
	return out
}
