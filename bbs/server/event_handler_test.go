package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/client"
	"drover.dev/bbs/events"
	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// subscription collects the events of one Subscribe stream.
type subscription struct {
	events chan *modelsv1.Event
	err    chan error
	cancel context.CancelFunc
}

// subscribe opens a stream and receives from it in the background.
func (h *harness) subscribe(after *uint64, cellID string) *subscription {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	stream, err := h.client.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: after, CellId: cellID})
	require.NoError(h.t, err)
	s := &subscription{events: make(chan *modelsv1.Event, 100000), err: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				s.err <- err
				return
			}
			s.events <- resp.GetEvent()
		}
	}()
	return s
}

// next waits for the next event.
func (s *subscription) next(t *testing.T) *modelsv1.Event {
	t.Helper()
	select {
	case e := <-s.events:
		return e
	case err := <-s.err:
		t.Fatalf("stream ended: %v", err)
	case <-time.After(waitFor):
		t.Fatal("no event before the deadline")
	}
	return nil
}

// until collects events up to and including the first one for which stop holds.
func (s *subscription) until(t *testing.T, stop func(*modelsv1.Event) bool) []*modelsv1.Event {
	t.Helper()
	var got []*modelsv1.Event
	for {
		e := s.next(t)
		got = append(got, e)
		if stop(e) {
			return got
		}
	}
}

// failure waits for the stream to end and returns its error.
func (s *subscription) failure(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.err:
		return err
	case <-time.After(waitFor):
		t.Fatal("stream did not end before the deadline")
		return nil
	}
}

// isTaskCreated matches the task_created event of a guid (used as a marker).
func isTaskCreated(guid string) func(*modelsv1.Event) bool {
	return func(e *modelsv1.Event) bool { return e.GetTaskCreated().GetTask().GetTaskGuid() == guid }
}

func (h *harness) latestSequence() uint64 {
	h.t.Helper()
	seq, err := h.db.LatestSequence(h.ctx())
	require.NoError(h.t, err)
	return seq
}

func typesOf(es []*modelsv1.Event) []string {
	types := make([]string, 0, len(es))
	for _, e := range es {
		types = append(types, models.EventType(e))
	}
	return types
}

func sequencesOf(es []*modelsv1.Event) []uint64 {
	seqs := make([]uint64, 0, len(es))
	for _, e := range es {
		seqs = append(seqs, e.GetSequence())
	}
	return seqs
}

func TestSubscribeStreamsTheOperationsAndResumes(t *testing.T) {
	h := newHarness(t)
	h.registerCell("cell-1")
	start := h.latestSequence()
	sub := h.subscribe(&start, "")

	h.desire("ev", 1)
	h.claim("ev", 0, "cell-1")
	h.start("ev", 0, "cell-1")
	_, err := h.client.CrashActualLRP(h.ctx(), &bbsv1.CrashActualLRPRequest{
		ActualLrpKey:         &modelsv1.ActualLRPKey{ProcessGuid: "ev", Index: 0, Domain: testDomain},
		ActualLrpInstanceKey: instanceKey("ev", 0, "cell-1"),
		ErrorMessage:         "oom",
	})
	require.NoError(t, err)
	_, err = h.client.RemoveDesiredLRP(h.ctx(), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: "ev"})
	require.NoError(t, err)
	h.desireTask("marker-1", "")

	all := sub.until(t, isTaskCreated("marker-1"))
	types := typesOf(all)
	for _, want := range []string{"desired_lrp_created", "actual_lrp_instance_created", "actual_lrp_instance_changed",
		"actual_lrp_crashed", "desired_lrp_removed", "actual_lrp_instance_removed", "task_created"} {
		require.Contains(t, types, want)
	}
	require.Equal(t, "desired_lrp_created", types[0])
	seqs := sequencesOf(all)
	for i := 1; i < len(seqs); i++ {
		require.Greater(t, seqs[i], seqs[i-1], "sequences increase")
	}
	require.Greater(t, seqs[0], start)

	t.Run("cancel ends the stream", func(t *testing.T) {
		sub.cancel()
		requireCode(t, sub.failure(t), codes.Canceled)
	})

	t.Run("resuming after the last sequence seen loses and repeats nothing", func(t *testing.T) {
		k := len(all) / 2
		resumed := h.subscribe(&seqs[k-1], "")
		h.desireTask("marker-2", "")
		rest := resumed.until(t, isTaskCreated("marker-2"))
		require.Equal(t, seqs[k:], sequencesOf(rest[:len(rest)-1]))
		for i := range rest[:len(rest)-1] {
			require.True(t, proto.Equal(all[k+i], rest[i]), "event %d differs", k+i)
		}
	})
}

// TestSubscribeWithoutCursorStreamsOnlyNewEvents: the response headers of a
// subscription name the sequence it starts after (the newest at admission without a
// cursor, else the cursor), and the first event is the next one.
func TestSubscribeWithoutCursorStreamsOnlyNewEvents(t *testing.T) {
	h := newHarness(t)
	for i := range 3 {
		h.desireTask(fmt.Sprintf("old-%d", i), "")
	}
	before := h.latestSequence()
	for _, tc := range []struct {
		name  string
		after *uint64
		want  uint64
	}{
		{"without a cursor", nil, before},
		{"with a cursor", new(before - 1), before - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), waitFor)
			defer cancel()
			stream, err := h.client.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: tc.after})
			require.NoError(t, err)
			header, err := stream.Header()
			require.NoError(t, err)
			require.Equal(t, []string{strconv.FormatUint(tc.want, 10)}, header.Get(client.AfterSequenceHeader))
			guid := "new-" + strings.ReplaceAll(tc.name, " ", "-")
			h.desireTask(guid, "")
			resp, err := stream.Recv()
			require.NoError(t, err)
			require.Equal(t, tc.want+1, resp.GetEvent().GetSequence(), "the first event follows the start")
			for resp.GetEvent().GetTaskCreated().GetTask().GetTaskGuid() != guid { // with a cursor: older ones first
				resp, err = stream.Recv()
				require.NoError(t, err)
			}
			created := resp.GetEvent()
			require.Greater(t, created.GetSequence(), before, "the new event: %v", created)
		})
	}
}

func TestSubscribeFiltersInstanceEventsByCell(t *testing.T) {
	h := newHarness(t)
	start := h.latestSequence()
	sub := h.subscribe(&start, "cell-a")

	h.desire("filtered", 2)
	h.claim("filtered", 0, "cell-a")
	h.claim("filtered", 1, "cell-b")
	h.desireTask("marker", "")

	got := sub.until(t, isTaskCreated("marker"))
	require.Equal(t, "desired_lrp_created", models.EventType(got[0]), "desired events always pass")
	var changed int
	for _, e := range got {
		if ch := e.GetActualLrpInstanceChanged(); ch != nil {
			require.Equal(t, int32(0), ch.GetActualLrpKey().GetIndex())
			changed++
		}
		require.NotContains(t, models.EventCellIDs(e), "cell-b")
	}
	require.Equal(t, 1, changed, "the claim on cell-a passes, the one on cell-b does not")
}

func TestSubscribeOutOfRangeAfterPruning(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{hub: events.HubOptions{
		Retention: time.Nanosecond, KeepEvents: 1, PruneInterval: 20 * time.Millisecond,
	}})
	for i := range 5 {
		h.desireTask(fmt.Sprintf("t%d", i), "")
	}
	zero := uint64(0)
	h.eventually(func() bool {
		sub := h.subscribe(&zero, "")
		select {
		case <-sub.events:
			sub.cancel()
			return false // not pruned yet
		case err := <-sub.err:
			return status.Code(err) == codes.OutOfRange && models.FromError(err).Type == models.ErrTypeResyncRequired
		case <-time.After(waitFor):
			return false
		}
	}, "the stream is refused with ResyncRequired once the events after 0 are pruned")
}

func TestSubscriberThatNeverReadsDoesNotSlowWriters(t *testing.T) {
	h := newHarness(t)
	start := h.latestSequence()

	// A stream that is never read: its flow-control window fills up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := h.client.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: &start})
	require.NoError(t, err)
	reader := h.subscribe(&start, "")

	const writes = 300
	annotation := strings.Repeat("a", 8<<10) // ~2.4 MB of events: far more than the window
	began := time.Now()
	for i := range writes {
		def := taskDefinition("")
		def.Annotation = annotation
		_, err := h.client.DesireTask(h.ctx(), &bbsv1.DesireTaskRequest{TaskGuid: fmt.Sprintf("w%d", i), Domain: testDomain, TaskDefinition: def})
		require.NoError(t, err)
	}
	t.Logf("%d writes took %s with a stuck subscriber", writes, time.Since(began))

	got := reader.until(t, isTaskCreated(fmt.Sprintf("w%d", writes-1)))
	require.Len(t, got, writes, "the reading subscriber got every event")
}
