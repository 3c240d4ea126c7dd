package events_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"drover.dev/bbs/events"
	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// waitFor bounds every wait in these tests.
const waitFor = 10 * time.Second

// testCtx is a context that ends with the test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	t.Cleanup(cancel)
	return ctx
}

// runHub starts a hub over db until the test ends.
func runHub(t *testing.T, db store.EventDB, opts events.HubOptions) *events.Hub {
	t.Helper()
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	hub := events.NewHub(db, opts, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
	return hub
}

// writeTasks desires n tasks, each appending one task_created event.
func writeTasks(t *testing.T, db store.TaskDB, prefix string, n int) {
	t.Helper()
	for i := range n {
		def := &modelsv1.TaskDefinition{
			Rootfs: "preloaded:cflinuxfs4",
			Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "vcap"}}},
		}
		_, err := db.DesireTask(testCtx(t), fmt.Sprintf("%s-%d", prefix, i), "domain", def)
		require.NoError(t, err)
	}
}

// subscriber runs Hub.Subscribe in the background and collects what it sends.
type subscriber struct {
	events chan *modelsv1.Event
	done   chan error
	cancel context.CancelFunc
}

func subscribe(t *testing.T, hub *events.Hub, after *uint64, cellID string) *subscriber {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &subscriber{events: make(chan *modelsv1.Event, 100000), done: make(chan error, 1), cancel: cancel}
	go func() {
		s.done <- hub.Subscribe(ctx, events.Subscription{After: after, CellID: cellID}, func(e *modelsv1.Event) error {
			s.events <- e
			return nil
		})
	}()
	return s
}

// take waits for n events.
func (s *subscriber) take(t *testing.T, n int) []*modelsv1.Event {
	t.Helper()
	got := make([]*modelsv1.Event, 0, n)
	deadline := time.After(waitFor)
	for len(got) < n {
		select {
		case e := <-s.events:
			got = append(got, e)
		case err := <-s.done:
			t.Fatalf("subscription ended after %d of %d events: %v", len(got), n, err)
		case <-deadline:
			t.Fatalf("only %d of %d events before the deadline", len(got), n)
		}
	}
	return got
}

// end waits for Subscribe to return.
func (s *subscriber) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(waitFor):
		t.Fatal("subscription did not end before the deadline")
		return nil
	}
}

func sequences(es []*modelsv1.Event) []uint64 {
	seqs := make([]uint64, 0, len(es))
	for _, e := range es {
		seqs = append(seqs, e.GetSequence())
	}
	return seqs
}

func requireIncreasing(t *testing.T, seqs []uint64) {
	t.Helper()
	for i := 1; i < len(seqs); i++ {
		require.Greater(t, seqs[i], seqs[i-1], "sequence %d", i)
	}
}

func TestSubscribeCatchesUpInPagesThenFollows(t *testing.T) {
	db := storetest.NewStore(t)
	reg := prometheus.NewRegistry()
	hub := runHub(t, db, events.HubOptions{PageSize: 7, Registerer: reg})
	writeTasks(t, db, "old", 20)

	zero := uint64(0)
	sub := subscribe(t, hub, &zero, "")
	old := sub.take(t, 20)
	requireIncreasing(t, sequences(old))
	for i, e := range old {
		require.Equal(t, fmt.Sprintf("old-%d", i), e.GetTaskCreated().GetTask().GetTaskGuid())
	}

	writeTasks(t, db, "new", 5)
	fresh := sub.take(t, 5)
	requireIncreasing(t, append(sequences(old), sequences(fresh)...))
	require.Equal(t, "new-4", fresh[4].GetTaskCreated().GetTask().GetTaskGuid())

	require.Equal(t, 1.0, metricValue(t, reg, "drover_bbs_event_subscribers"))
	// The counter moves once send has returned, just after the subscriber got the event.
	eventually(t, func() bool { return metricValue(t, reg, "drover_bbs_events_delivered_total") == 25 }, "25 events counted")

	sub.cancel()
	require.ErrorIs(t, sub.end(t), context.Canceled)
	require.Equal(t, 0.0, metricValue(t, reg, "drover_bbs_event_subscribers"))
}

// metricValue reads a gauge or counter from the registry, summed over its labels.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			sum := 0.0
			for _, m := range f.GetMetric() {
				sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestSubscribeWithoutCursorSendsOnlyNewEvents(t *testing.T) {
	db := storetest.NewStore(t)
	hub := runHub(t, db, events.HubOptions{})
	writeTasks(t, db, "old", 3)
	before, err := db.LatestSequence(testCtx(t))
	require.NoError(t, err)

	sub := subscribe(t, hub, nil, "")
	// Subscribe gives no "ready" signal: write until the first event arrives.
	deadline := time.Now().Add(waitFor)
	for i := 0; len(sub.events) == 0; i++ {
		require.True(t, time.Now().Before(deadline), "no event before the deadline")
		writeTasks(t, db, fmt.Sprintf("new%d", i), 1)
		time.Sleep(20 * time.Millisecond)
	}
	first := sub.take(t, 1)[0]
	require.Greater(t, first.GetSequence(), before)
}

// TestAdmittedNamesTheStart: Admitted names the sequence a subscription starts after
// (its cursor or, without one, the newest committed), and the first event is the next.
func TestAdmittedNamesTheStart(t *testing.T) {
	db := storetest.NewStore(t)
	hub := runHub(t, db, events.HubOptions{})
	writeTasks(t, db, "old", 3)
	latest, err := db.LatestSequence(testCtx(t))
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		after *uint64
		want  uint64
	}{
		{"without a cursor", nil, latest},
		{"with a cursor", new(latest - 2), latest - 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			admitted := make(chan uint64, 1)
			got := make(chan *modelsv1.Event, 100)
			done := make(chan error, 1)
			go func() {
				done <- hub.Subscribe(ctx, events.Subscription{After: tc.after, Admitted: func(after uint64) { admitted <- after }},
					func(e *modelsv1.Event) error { got <- e; return nil })
			}()
			select {
			case start := <-admitted:
				require.Equal(t, tc.want, start)
			case err := <-done:
				t.Fatalf("subscription ended before admission: %v", err)
			case <-time.After(waitFor):
				t.Fatal("not admitted before the deadline")
			}
			writeTasks(t, db, "new-"+strings.ReplaceAll(tc.name, " ", "-"), 1)
			select {
			case e := <-got:
				require.Equal(t, tc.want+1, e.GetSequence())
			case <-time.After(waitFor):
				t.Fatal("no event before the deadline")
			}
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
		})
	}
}

func TestResumeAfterLastSequenceLosesAndRepeatsNothing(t *testing.T) {
	db := storetest.NewStore(t)
	hub := runHub(t, db, events.HubOptions{PageSize: 4})
	writeTasks(t, db, "a", 10)

	zero := uint64(0)
	first := subscribe(t, hub, &zero, "")
	got := first.take(t, 6)
	first.cancel()
	require.ErrorIs(t, first.end(t), context.Canceled)

	last := got[len(got)-1].GetSequence()
	resumed := subscribe(t, hub, &last, "")
	writeTasks(t, db, "b", 5)
	rest := resumed.take(t, 9)

	all := append(got, rest...)
	requireIncreasing(t, sequences(all))
	for i, e := range all {
		want := fmt.Sprintf("a-%d", i)
		if i >= 10 {
			want = fmt.Sprintf("b-%d", i-10)
		}
		require.Equal(t, want, e.GetTaskCreated().GetTask().GetTaskGuid())
	}
	select {
	case e := <-resumed.events:
		t.Fatalf("unexpected extra event %d", e.GetSequence())
	default:
	}
}

func TestTwoHubsOnOneDatabaseDeliverTheSameSequence(t *testing.T) {
	url := storetest.NewDatabase(t)
	replicaA := openStore(t, url)
	replicaB := openStore(t, url)
	hubA := runHub(t, replicaA, events.HubOptions{})
	hubB := runHub(t, replicaB, events.HubOptions{})

	zero := uint64(0)
	subA := subscribe(t, hubA, &zero, "")
	subB := subscribe(t, hubB, &zero, "")
	// Writers on both replicas, interleaved.
	for i := range 10 {
		writeTasks(t, replicaA, fmt.Sprintf("a%d", i), 1)
		writeTasks(t, replicaB, fmt.Sprintf("b%d", i), 1)
	}
	gotA, gotB := subA.take(t, 20), subB.take(t, 20)
	requireIncreasing(t, sequences(gotA))
	require.Equal(t, sequences(gotA), sequences(gotB))
	for i := range gotA {
		require.Equal(t, gotA[i].GetTaskCreated().GetTask().GetTaskGuid(), gotB[i].GetTaskCreated().GetTask().GetTaskGuid())
	}
}

// openStore opens and migrates another store (a replica) on an existing database.
func openStore(t *testing.T, url string) *store.Postgres {
	t.Helper()
	return storetest.NewStoreWithConfig(t, store.Config{URL: url})
}

func TestSlowSubscriberBlocksNeitherWritersNorOthers(t *testing.T) {
	db := storetest.NewStore(t)
	hub := runHub(t, db, events.HubOptions{PageSize: 10})
	zero := uint64(0)

	stuck := make(chan struct{}, 1) // buffered: the first send must not be dropped
	stuckCtx, cancelStuck := context.WithCancel(context.Background())
	stuckDone := make(chan error, 1)
	go func() {
		stuckDone <- hub.Subscribe(stuckCtx, events.Subscription{After: &zero}, func(*modelsv1.Event) error {
			select {
			case stuck <- struct{}{}:
			default:
			}
			<-stuckCtx.Done() // never finishes sending
			return stuckCtx.Err()
		})
	}()
	reader := subscribe(t, hub, &zero, "")

	const writes = 200
	writeTasks(t, db, "w", 1)
	select { // the slow subscriber is now blocked inside send
	case <-stuck:
	case <-time.After(waitFor):
		t.Fatal("the slow subscriber never received its first event")
	}
	writeTasks(t, db, "w-more", writes-1)

	got := reader.take(t, writes)
	requireIncreasing(t, sequences(got))
	cancelStuck()
	select {
	case err := <-stuckDone:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(waitFor):
		t.Fatal("the slow subscriber did not end after its context was cancelled")
	}
}

func TestSendErrorEndsTheSubscription(t *testing.T) {
	db := storetest.NewStore(t)
	hub := runHub(t, db, events.HubOptions{})
	writeTasks(t, db, "t", 2)
	zero := uint64(0)
	boom := errors.New("client went away")
	calls := 0
	err := hub.Subscribe(testCtx(t), events.Subscription{After: &zero}, func(*modelsv1.Event) error {
		calls++
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, calls)
	require.Error(t, hub.Subscribe(testCtx(t), events.Subscription{After: &zero}, nil), "nil send is refused")
}

func TestResyncRequiredAfterPruning(t *testing.T) {
	db := storetest.NewStore(t)
	hub := runHub(t, db, events.HubOptions{Retention: time.Nanosecond, KeepEvents: 1, PruneInterval: 10 * time.Millisecond})
	writeTasks(t, db, "t", 5)
	latest, err := db.LatestSequence(testCtx(t))
	require.NoError(t, err)

	zero := uint64(0)
	deadline := time.Now().Add(waitFor)
	for {
		ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
		err := hub.Subscribe(ctx, events.Subscription{After: &zero}, func(*modelsv1.Event) error { return nil })
		cancel()
		if errors.Is(err, models.ErrResyncRequired) {
			break
		}
		require.True(t, time.Now().Before(deadline), "no resync before the deadline, last error: %v", err)
	}

	// A cursor at the newest event is still good.
	sub := subscribe(t, hub, &latest, "")
	writeTasks(t, db, "after", 1)
	require.Equal(t, "after-0", sub.take(t, 1)[0].GetTaskCreated().GetTask().GetTaskGuid())
}

// gatedSubscriber takes events until it has n, then blocks in send until let is
// called or its context ends: a subscriber that stopped reading.
type gatedSubscriber struct {
	got      chan *modelsv1.Event
	gate     chan struct{}
	admitted chan struct{}
	done     chan error
	cancel   context.CancelFunc
}

func subscribeGated(t *testing.T, hub *events.Hub, sub events.Subscription, n int) *gatedSubscriber {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g := &gatedSubscriber{
		got: make(chan *modelsv1.Event, 100000), gate: make(chan struct{}),
		admitted: make(chan struct{}), done: make(chan error, 1), cancel: cancel,
	}
	sub.Admitted = func(uint64) { close(g.admitted) }
	taken := 0
	go func() {
		g.done <- hub.Subscribe(ctx, sub, func(e *modelsv1.Event) error {
			if taken == n {
				select {
				case <-g.gate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			taken++
			g.got <- e
			return nil
		})
	}()
	return g
}

// let unblocks the send the subscriber is stuck in and every later one.
func (g *gatedSubscriber) let() { close(g.gate) }

func (g *gatedSubscriber) received() []*modelsv1.Event {
	var out []*modelsv1.Event
	for {
		select {
		case e := <-g.got:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (g *gatedSubscriber) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-g.done:
		return err
	case <-time.After(waitFor):
		t.Fatal("subscription did not end before the deadline")
		return nil
	}
}

// eventually waits for cond, failing after waitFor.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, waitFor, 10*time.Millisecond, what)
}

func TestSlowSubscriberIsDisconnectedWithItsCursorAndResumesWithNoGap(t *testing.T) {
	db := storetest.NewStore(t)
	reg := prometheus.NewRegistry()
	hub := runHub(t, db, events.HubOptions{PageSize: 4, SendTimeout: 50 * time.Millisecond, Registerer: reg})
	writeTasks(t, db, "t", 30)

	zero := uint64(0)
	slow := subscribeGated(t, hub, events.Subscription{After: &zero, Identity: "emitter"}, 10)
	eventually(t, func() bool {
		return len(slow.got) == 10 && metricValue(t, reg, "drover_bbs_event_subscribers") == 0 &&
			metricValue(t, reg, "drover_bbs_event_subscribers_too_slow_total") == 1
	}, "the subscriber stuck at its 11th event is counted too slow and no longer streamed to")
	select {
	case err := <-slow.done:
		t.Fatalf("the subscription ended while its send was still in flight: %v", err)
	default:
	}

	slow.let() // it reads again: the event in flight goes out, then the stream ends
	err := slow.end(t)
	var tooSlow *events.SlowSubscriberError
	require.ErrorAs(t, err, &tooSlow)
	require.Equal(t, uint64(11), tooSlow.Cursor, "the last event sent, the one in flight included")
	first := slow.received()
	require.Len(t, first, 11)
	require.Equal(t, 1.0, metricValue(t, reg, "drover_bbs_event_subscribers_too_slow_total"))

	resumed := subscribe(t, hub, &tooSlow.Cursor, "")
	rest := resumed.take(t, 19)
	all := append(first, rest...)
	for i, e := range all {
		require.Equal(t, fmt.Sprintf("t-%d", i), e.GetTaskCreated().GetTask().GetTaskGuid(), "event %d", i)
	}
	requireIncreasing(t, sequences(all))
}

func TestStalledSubscriberKeepsItsPlaceUntilItLeaves(t *testing.T) {
	db := storetest.NewStore(t)
	reg := prometheus.NewRegistry()
	hub := runHub(t, db, events.HubOptions{SendTimeout: 50 * time.Millisecond, MaxSubscribersPerIdentity: 1, Registerer: reg})
	writeTasks(t, db, "t", 5)

	zero := uint64(0)
	stalled := subscribeGated(t, hub, events.Subscription{After: &zero, Identity: "ctl"}, 2)
	eventually(t, func() bool { return metricValue(t, reg, "drover_bbs_event_subscribers") == 0 && len(stalled.got) == 2 },
		"the stalled subscriber is no longer streamed to")

	err := hub.Subscribe(testCtx(t), events.Subscription{After: &zero, Identity: "ctl"}, func(*modelsv1.Event) error { return nil })
	var tooMany *events.TooManySubscribersError
	require.ErrorAs(t, err, &tooMany, "its send is still in flight: it still counts against the cap")
	require.Equal(t, 1, tooMany.Limit)

	stalled.cancel() // it leaves without reading
	var tooSlow *events.SlowSubscriberError
	require.ErrorAs(t, stalled.end(t), &tooSlow)
	require.Equal(t, uint64(2), tooSlow.Cursor, "the event in flight was never sent")

	again := subscribeGated(t, hub, events.Subscription{After: &tooSlow.Cursor, Identity: "ctl"}, 3)
	select {
	case <-again.admitted:
	case err := <-again.done:
		t.Fatalf("refused after the stalled one left: %v", err)
	case <-time.After(waitFor):
		t.Fatal("not admitted before the deadline")
	}
	eventually(t, func() bool { return len(again.got) == 3 }, "the rest arrives")
	require.Equal(t, []uint64{3, 4, 5}, sequences(again.received()))
}

func TestSubscriptionsPerIdentityAreCapped(t *testing.T) {
	db := storetest.NewStore(t)
	reg := prometheus.NewRegistry()
	hub := runHub(t, db, events.HubOptions{MaxSubscribersPerIdentity: 2, Registerer: reg})

	admit := func(identity string) *gatedSubscriber {
		t.Helper()
		g := subscribeGated(t, hub, events.Subscription{Identity: identity}, 0)
		select {
		case <-g.admitted:
		case err := <-g.done:
			t.Fatalf("%q refused: %v", identity, err)
		case <-time.After(waitFor):
			t.Fatalf("%q not admitted before the deadline", identity)
		}
		return g
	}
	alice := admit("alice")
	admit("alice")
	admit("bob")
	admit(events.AnonymousIdentity)
	admit(events.AnonymousIdentity)

	admittedAgain := false
	err := hub.Subscribe(testCtx(t), events.Subscription{Identity: "alice", Admitted: func(uint64) { admittedAgain = true }},
		func(*modelsv1.Event) error { return nil })
	var tooMany *events.TooManySubscribersError
	require.ErrorAs(t, err, &tooMany)
	require.Equal(t, events.TooManySubscribersError{Identity: "alice", Limit: 2}, *tooMany)
	require.False(t, admittedAgain, "Admitted is not called for a refused subscription")
	require.ErrorAs(t, hub.Subscribe(testCtx(t), events.Subscription{}, func(*modelsv1.Event) error { return nil }), &tooMany,
		"anonymous callers share one cap")
	require.Equal(t, 2.0, metricValue(t, reg, "drover_bbs_event_subscribers_refused_total"))

	alice.cancel()
	require.ErrorIs(t, alice.end(t), context.Canceled)
	admit("alice")
}

// pageRecorder is the real store, recording the length of each page it returns.
type pageRecorder struct {
	store.EventDB
	mu    sync.Mutex
	pages []int
}

func (r *pageRecorder) EventPage(ctx context.Context, after uint64, limit, maxBytes int) ([]*modelsv1.Event, error) {
	page, err := r.EventDB.EventPage(ctx, after, limit, maxBytes)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pages = append(r.pages, len(page))
	return page, err
}

func TestPagesAreBoundedByBytes(t *testing.T) {
	db := storetest.NewStore(t)
	recorder := &pageRecorder{EventDB: db}
	hub := runHub(t, recorder, events.HubOptions{PageBytes: 1})
	writeTasks(t, db, "t", 12)

	zero := uint64(0)
	got := subscribe(t, hub, &zero, "").take(t, 12)
	requireIncreasing(t, sequences(got))
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	require.NotEmpty(t, recorder.pages)
	require.LessOrEqual(t, slices.Max(recorder.pages), 1, "every page holds a single event: each is over the budget")
}
