package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

func TestEventsAfterPagesInOrder(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	require.Zero(t, latest(t, s))
	events, err := s.EventsAfter(ctx, 0, 10)
	require.NoError(t, err)
	require.Empty(t, events)

	desire(t, s, newDesiredLRP("app", 4)) // 5 events
	_, err = s.DesireTask(ctx, "task", "d", newTaskDefinition())
	require.NoError(t, err)
	require.Equal(t, uint64(6), latest(t, s))

	var all []*modelsv1.Event
	for after := uint64(0); ; {
		page, err := s.EventsAfter(ctx, after, 4)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		require.LessOrEqual(t, len(page), 4)
		all = append(all, page...)
		after = page[len(page)-1].Sequence
	}
	require.Len(t, all, 6)
	for i, e := range all {
		require.Equal(t, uint64(i+1), e.Sequence)
		require.Equal(t, clock.Now().UnixNano(), e.CreatedAt)
	}
	require.Equal(t, "app", all[0].GetDesiredLrpCreated().GetDesiredLrp().GetProcessGuid())
	require.Equal(t, secretEnvValue, all[0].GetDesiredLrpCreated().GetDesiredLrp().GetEnv()[0].GetValue())
	require.Equal(t, "task", all[5].GetTaskCreated().GetTask().GetTaskGuid())

	_, err = s.EventsAfter(ctx, 1<<63, 1)
	requireErrorType(t, err, models.ErrTypeInvalidRequest)
}

func TestEventPageStopsAtTheByteBudget(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)
	for i := range 6 {
		def := newTaskDefinition()
		def.Annotation = strings.Repeat("x", 3000) // each stored payload is over 3000 bytes
		_, err := s.DesireTask(ctx, fmt.Sprintf("big-%d", i), "d", def)
		require.NoError(t, err)
	}

	page, err := s.EventPage(ctx, 0, 10, 7000)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2}, seqs(page), "a third payload would pass 7000 bytes")

	page, err = s.EventPage(ctx, 2, 10, 100)
	require.NoError(t, err)
	require.Equal(t, []uint64{3}, seqs(page), "an event larger than the budget still comes, alone")

	page, err = s.EventPage(ctx, 3, 2, 1<<20)
	require.NoError(t, err)
	require.Equal(t, []uint64{4, 5}, seqs(page), "the count limit still applies")

	page, err = s.EventPage(ctx, 0, 10, 0)
	require.NoError(t, err)
	require.Len(t, page, 6, "no byte budget")

	page, err = s.EventPage(ctx, 6, 10, 7000)
	require.NoError(t, err)
	require.Empty(t, page)
}

func seqs(events []*modelsv1.Event) []uint64 {
	out := make([]uint64, 0, len(events))
	for _, e := range events {
		out = append(out, e.GetSequence())
	}
	return out
}

// TestConcurrentWritersCommitOrder runs 8 writers × 50 claims and starts while a reader
// polls EventsAfter: sequences must be gap-free at every poll (a sequence becomes
// visible only after every lower one, i.e. sequence order is commit order), and each
// row's events must carry increasing modification indexes.
func TestConcurrentWritersCommitOrder(t *testing.T) {
	t.Parallel()
	s := storetest.NewStoreWithConfig(t, store.Config{MaxConns: 12})
	ctx := testContext(t)
	const writers, perWriter = 8, 50
	for w := range writers {
		desire(t, s, newDesiredLRP(fmt.Sprintf("app-%d", w), perWriter/2))
	}
	start := latest(t, s)

	done := make(chan struct{})
	var wg sync.WaitGroup
	writeErrs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			guid := fmt.Sprintf("app-%d", w)
			for i := range int32(perWriter / 2) {
				ik := instanceKey(fmt.Sprintf("%s-%d", guid, i), "cell")
				if _, err := s.ClaimActualLRP(ctx, guid, i, ik); err != nil {
					writeErrs <- err
					return
				}
				if _, err := s.StartActualLRP(ctx, lrpKey(guid, i), ik, netInfo("1.2.3.4"), store.StartOptions{}); err != nil {
					writeErrs <- err
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	var seen []*modelsv1.Event
	after := start
	finished := false
	for {
		page, err := s.EventsAfter(ctx, after, 64)
		require.NoError(t, err)
		for i, e := range page {
			require.Equal(t, after+uint64(i)+1, e.Sequence, "gap or reordering seen by a concurrent reader")
		}
		if len(page) > 0 {
			after = page[len(page)-1].Sequence
			seen = append(seen, page...)
			continue
		}
		if finished {
			break
		}
		select {
		case <-done:
			finished = true // one more pass to drain
		default:
		}
	}
	close(writeErrs)
	for err := range writeErrs {
		require.NoError(t, err)
	}
	require.Len(t, seen, writers*perWriter, "one changed event per claim and per start")
	require.Equal(t, after, latest(t, s))

	lastIndex := map[string]uint32{}
	for _, e := range seen {
		changed := e.GetActualLrpInstanceChanged()
		require.NotNil(t, changed)
		row := fmt.Sprintf("%s/%d", changed.ActualLrpKey.ProcessGuid, changed.ActualLrpKey.Index)
		idx := changed.After.ModificationTag.Index
		require.Greater(t, idx, lastIndex[row], "events of %s out of order", row)
		lastIndex[row] = idx
	}
}

func TestPruneEventsAndResync(t *testing.T) {
	t.Parallel()
	s, clock := newStoreWithClock(t)
	ctx := testContext(t)
	desire(t, s, newDesiredLRP("old", 2)) // events 1-3 at t0
	clock.Advance(2 * time.Hour)
	desire(t, s, newDesiredLRP("new", 1)) // events 4-5 at t0+2h

	deleted, err := s.PruneEvents(ctx, time.Hour, 0)
	require.NoError(t, err)
	require.Equal(t, int64(3), deleted)

	for _, after := range []uint64{0, 1, 2} {
		_, err = s.EventsAfter(ctx, after, 10)
		requireErrorType(t, err, models.ErrTypeResyncRequired)
	}
	events, err := s.EventsAfter(ctx, 3, 10)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, uint64(4), events[0].Sequence)
	require.Equal(t, uint64(5), latest(t, s), "pruning keeps the latest sequence")

	// keep: the newest events survive even when old enough.
	clock.Advance(2 * time.Hour)
	desire(t, s, newDesiredLRP("newer", 2)) // events 6-8
	clock.Advance(2 * time.Hour)
	deleted, err = s.PruneEvents(ctx, time.Hour, 2)
	require.NoError(t, err)
	require.Equal(t, int64(3), deleted) // 4-6; 7 and 8 are kept
	_, err = s.EventsAfter(ctx, 5, 10)
	requireErrorType(t, err, models.ErrTypeResyncRequired)
	events, err = s.EventsAfter(ctx, 6, 10)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, uint64(7), events[0].Sequence)

	deleted, err = s.PruneEvents(ctx, time.Hour, 5)
	require.NoError(t, err)
	require.Zero(t, deleted)

	// New events continue the sequence after a prune.
	desire(t, s, newDesiredLRP("after-prune", 0))
	events, err = s.EventsAfter(ctx, 8, 10)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, uint64(9), events[0].Sequence)
}

func TestWaitForEvents(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	s := storetest.NewStoreWithConfig(t, store.Config{URL: url})
	db := rawDB(t, url)
	desire(t, s, newDesiredLRP("before-listening", 0))

	ctx, cancel := context.WithCancel(testContext(t))
	notified := make(chan uint64, 100)
	returned := make(chan error, 1)
	go func() { returned <- s.WaitForEvents(ctx, func(latest uint64) { notified <- latest }) }()

	require.Equal(t, uint64(1), waitNotification(t, notified, 1), "an initial notification covers earlier commits")
	desire(t, s, newDesiredLRP("a", 2))
	require.Equal(t, uint64(4), waitNotification(t, notified, 4))

	// Kill the listening session: the store reconnects and notifies again at once.
	tag, err := db.Exec(testContext(t), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN%'`)
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected())
	desire(t, s, newDesiredLRP("b", 0))
	require.Equal(t, uint64(5), waitNotification(t, notified, 5))
	desire(t, s, newDesiredLRP("c", 0))
	require.Equal(t, uint64(6), waitNotification(t, notified, 6))

	cancel()
	select {
	case err := <-returned:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForEvents did not return after its context ended")
	}
	requireErrorType(t, s.WaitForEvents(testContext(t), nil), models.ErrTypeInvalidRequest)
}

// waitNotification waits for a notification announcing at least want.
func waitNotification(t *testing.T, notified <-chan uint64, want uint64) uint64 {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-notified:
			if got >= want {
				return got
			}
		case <-deadline:
			t.Fatalf("no notification of sequence %d", want)
		}
	}
}
