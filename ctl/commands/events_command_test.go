package commands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/models"
	"drover.dev/ctl/commands"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// testEvents are desired-LRP-removed events with sequences 1..n.
func testEvents(n int) []*modelsv1.Event {
	var events []*modelsv1.Event
	for i := 1; i <= n; i++ {
		events = append(events, &modelsv1.Event{
			Sequence: uint64(i),
			Payload: &modelsv1.Event_DesiredLrpRemoved{DesiredLrpRemoved: &modelsv1.DesiredLRPRemovedEvent{
				DesiredLrp: &modelsv1.DesiredLRP{ProcessGuid: "lrp-" + string(rune('a'+i-1))},
			}},
		})
	}
	return events
}

// replayThenWait sends the events after the request's cursor, then holds the stream open.
func replayThenWait(events []*modelsv1.Event) func(*bbsv1.SubscribeRequest, grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
	return func(req *bbsv1.SubscribeRequest, stream grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
		for _, e := range events {
			if req.AfterSequence != nil && e.GetSequence() <= req.GetAfterSequence() {
				continue
			}
			if err := stream.Send(&bbsv1.SubscribeResponse{Event: e}); err != nil {
				return err
			}
		}
		<-stream.Context().Done()
		return nil
	}
}

// sequences reads the first column of text event lines.
func sequences(stdout string) []string {
	var seqs []string
	for _, line := range lines(stdout) {
		if f := strings.Fields(line); len(f) > 0 {
			seqs = append(seqs, f[0])
		}
	}
	return seqs
}

func TestEventsReplayStopsWhenCaughtUp(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.subscribe = replayThenWait(testEvents(4)) })

	started := time.Now()
	res := run(t, ft.env, "events", "--after", "1")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.GreaterOrEqual(t, time.Since(started), commands.CaughtUpAfter, "waited for a quiet period")
	require.Equal(t, []string{"2", "3", "4"}, sequences(res.stdout))
	require.Equal(t, []string{"2", "-", "desired_lrp_removed", "lrp-b"}, strings.Fields(lines(res.stdout)[0]))
	require.True(t, proto.Equal(&bbsv1.SubscribeRequest{AfterSequence: proto.Uint64(1)}, ft.bbs.lastRequest(t)))

	res = run(t, ft.env, "events", "--after", "0", "--cell", "cell-1", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.SubscribeRequest{AfterSequence: proto.Uint64(0), CellId: "cell-1"}, ft.bbs.lastRequest(t)))
	out := lines(res.stdout)
	require.Len(t, out, 4)
	var first struct {
		Sequence uint64          `json:"sequence"`
		Type     string          `json:"type"`
		Data     json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(out[0]), &first))
	require.Equal(t, uint64(1), first.Sequence)
	require.Equal(t, "desired_lrp_removed", first.Type)
	require.Contains(t, string(first.Data), `"lrp-a"`)
}

func TestEventsLostCursor(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.subscribe = func(*bbsv1.SubscribeRequest, grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
			return models.ErrResyncRequired
		}
	})
	for _, args := range [][]string{{"events", "--after", "3"}, {"events", "--after", "3", "--follow"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			res := run(t, ft.env, args...)
			require.Equal(t, commands.ExitFailure, res.code)
			require.Equal(t, "droverctl: ResyncRequired: "+models.ErrResyncRequired.Message+"\n", res.stderr)
		})
	}
}

// syncBuffer is a bytes.Buffer safe to read while droverctl writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// followInBackground runs droverctl until the test cancels it, returning its exit status.
func followInBackground(t *testing.T, env commands.Env, args ...string) (stdout, stderr *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- commands.Run(ctx, args, stdout, stderr, env) }()
	stop = func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("droverctl did not stop after cancellation")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	return stdout, stderr, stop
}

func TestEventsFollowResumesAfterTheLastSequence(t *testing.T) {
	events := testEvents(4)
	var mu sync.Mutex
	var cursors []*uint64
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.subscribe = func(req *bbsv1.SubscribeRequest, stream grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
			mu.Lock()
			cursors = append(cursors, req.AfterSequence)
			attempt := len(cursors)
			mu.Unlock()
			if attempt == 1 {
				// The first subscription delivers two events and then the BBS goes away.
				for _, e := range events[:2] {
					if err := stream.Send(&bbsv1.SubscribeResponse{Event: e}); err != nil {
						return err
					}
				}
				return status.Error(codes.Unavailable, "bbs shutting down")
			}
			return replayThenWait(events)(req, stream)
		}
	})

	stdout, stderr, stop := followInBackground(t, ft.env, "events", "--follow")
	require.Eventually(t, func() bool { return len(sequences(stdout.String())) >= 4 }, 10*time.Second, 10*time.Millisecond,
		"stdout: %s\nstderr: %s", stdout, stderr)
	require.Equal(t, commands.ExitOK, stop(), "interrupting --follow is its normal end")

	require.Equal(t, []string{"1", "2", "3", "4"}, sequences(stdout.String()), "no event lost or repeated")
	require.Contains(t, stderr.String(), "resubscribing after sequence 2")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, cursors, 2)
	require.Nil(t, cursors[0], "--follow without --after asks only for new events")
	require.NotNil(t, cursors[1])
	require.Equal(t, uint64(2), *cursors[1])
}

func TestEventsFollowWaitsForNewEvents(t *testing.T) {
	ft := startFakeBBS(t, nil)
	stdout, stderr, stop := followInBackground(t, ft.env, "events", "--follow", "--cell", "cell-9")
	require.Eventually(t, func() bool { return len(ft.bbs.recorded()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, commands.ExitOK, stop())
	require.Empty(t, stdout.String())
	require.Empty(t, stderr.String())
	require.True(t, proto.Equal(&bbsv1.SubscribeRequest{CellId: "cell-9"}, ft.bbs.lastRequest(t)))
}
