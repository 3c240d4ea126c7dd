package watcher

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"
	"google.golang.org/protobuf/types/known/structpb"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/route-emitter/routingtable"
)

const (
	waitFor   = 10 * time.Second
	pollEvery = 10 * time.Millisecond
)

func desired(t *testing.T) *modelsv1.DesiredLRP {
	v, err := structpb.NewValue([]any{map[string]any{"hostnames": []any{"a.example.com"}, "port": float64(8080)}})
	require.NoError(t, err)
	return &modelsv1.DesiredLRP{ProcessGuid: "web", Domain: "cf-apps", LogGuid: "app", Instances: 2,
		Routes: map[string]*structpb.Value{"cf-router": v}, ModificationTag: &modelsv1.ModificationTag{Epoch: "d", Index: 1}}
}

func actual(index int32) *modelsv1.ActualLRP {
	return &modelsv1.ActualLRP{ProcessGuid: "web", Index: index, Domain: "cf-apps", InstanceGuid: "ig-" + string(rune('a'+index)),
		State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, Routable: true, Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY,
		ModificationTag: &modelsv1.ModificationTag{Epoch: "a", Index: 1},
		NetInfo:         &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61000 + uint32(index)}}}}
}

func created(a any) *modelsv1.Event {
	switch p := a.(type) {
	case *modelsv1.DesiredLRP:
		return &modelsv1.Event{Payload: &modelsv1.Event_DesiredLrpCreated{DesiredLrpCreated: &modelsv1.DesiredLRPCreatedEvent{DesiredLrp: p}}}
	default:
		return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceCreated{ActualLrpInstanceCreated: &modelsv1.ActualLRPInstanceCreatedEvent{ActualLrp: p.(*modelsv1.ActualLRP)}}}
	}
}

func removed(a *modelsv1.ActualLRP) *modelsv1.Event {
	return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceRemoved{ActualLrpInstanceRemoved: &modelsv1.ActualLRPInstanceRemovedEvent{ActualLrp: a}}}
}

func start(t *testing.T, bbs *fakeBBS, em *fakeEmitter, stateFile string) (*Watcher, ifrit.Process) {
	t.Helper()
	w := New(bbs, em, Options{SyncInterval: time.Hour, Timeout: time.Second, StateFile: stateFile, SaveDelay: 20 * time.Millisecond})
	return w, invoke(t, bbs, w)
}

// invoke runs w and waits until it has asked to subscribe (tests count the requests).
func invoke(t *testing.T, bbs *fakeBBS, w *Watcher) ifrit.Process {
	t.Helper()
	before := len(bbs.subscribeRequests())
	p := ifrit.Invoke(ifrit.RunFunc(w.Run))
	t.Cleanup(func() {
		p.Signal(os.Interrupt)
		<-p.Wait()
	})
	require.Eventually(t, func() bool { return len(bbs.subscribeRequests()) > before }, waitFor, pollEvery, "subscribed")
	return p
}

// TestResumesFromTheSavedCursorAfterACrash: the state file copied while running (as a
// kill -9 leaves it) lets a new watcher resume after the saved sequence; the replayed
// removal unregisters the route the loaded table had.
func TestResumesFromTheSavedCursorAfterACrash(t *testing.T) {
	dir := t.TempDir()
	live, crashed := filepath.Join(dir, "live.json"), filepath.Join(dir, "crashed.json")
	bbs := newFakeBBS()
	em := &fakeEmitter{}
	w, _ := start(t, bbs, em, live)
	require.Eventually(t, func() bool { return w.Status().Synced }, waitFor, pollEvery)
	bbs.publish(created(desired(t)))
	bbs.publish(created(actual(0)))
	bbs.publish(created(actual(1)))
	require.Eventually(t, func() bool { r, _ := em.counts(); return r == 2 }, waitFor, pollEvery)
	require.Eventually(t, func() bool {
		st, err := loadState(live)
		return err == nil && st.Sequence != nil && *st.Sequence == 3
	}, waitFor, pollEvery, "state saved with cursor 3")
	data, err := os.ReadFile(live)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(crashed, data, 0o600))

	// While it is down: instance 1 goes away; the BBS snapshot agrees.
	bbs.publish(removed(actual(1)))
	bbs.mu.Lock()
	bbs.desired = []*modelsv1.DesiredLRPRoutingInfo{{ProcessGuid: "web", Domain: "cf-apps", LogGuid: "app", Instances: 2,
		Routes: desired(t).Routes, ModificationTag: desired(t).ModificationTag}}
	bbs.actuals = []*modelsv1.ActualLRP{actual(0)}
	bbs.mu.Unlock()

	bbs2 := bbs
	em2 := &fakeEmitter{}
	w2, _ := start(t, bbs2, em2, crashed)
	require.Eventually(t, func() bool { _, u := em2.counts(); return u == 1 }, waitFor, pollEvery, "the replayed removal unregisters")
	reqs := bbs.subscribeRequests()
	last := reqs[len(reqs)-1]
	require.NotNil(t, last.AfterSequence)
	assert.Equal(t, uint64(3), *last.AfterSequence)
	require.Eventually(t, func() bool { return w2.Status().Synced && w2.Status().LastSequence == 4 }, waitFor, pollEvery)
	routes := w2.Routes(routingtable.Filter{})
	require.Len(t, routes, 1)
	assert.Len(t, routes[0].Endpoints, 1)
	r, u := em2.counts()
	assert.Equal(t, []int{0, 1}, []int{r, u}, "the sync after the replay changes nothing more")
}

// TestOutOfRangeResyncsAndSubscribesAfresh: a cursor older than retention makes the
// watcher subscribe without a cursor and run a full sync.
func TestOutOfRangeResyncsAndSubscribesAfresh(t *testing.T) {
	dir := t.TempDir()
	stateFile := filepath.Join(dir, "state.json")
	seq := uint64(2)
	require.NoError(t, os.WriteFile(stateFile, []byte(`{"sequence":2,"table":{"processes":[]}}`), 0o600))
	bbs := newFakeBBS()
	bbs.oldest = 10
	bbs.desired = []*modelsv1.DesiredLRPRoutingInfo{{ProcessGuid: "web", Domain: "cf-apps", Instances: 2,
		Routes: desired(t).Routes, ModificationTag: desired(t).ModificationTag}}
	bbs.actuals = []*modelsv1.ActualLRP{actual(0)}
	em := &fakeEmitter{}
	start(t, bbs, em, stateFile)
	require.Eventually(t, func() bool {
		reqs := bbs.subscribeRequests()
		return len(reqs) >= 2 && reqs[len(reqs)-1].AfterSequence == nil && bbs.syncCount() >= 2
	}, waitFor, pollEvery, "fresh subscription and a second sync")
	assert.Equal(t, seq, *bbs.subscribeRequests()[0].AfterSequence)
	r, _ := em.counts()
	assert.Equal(t, 1, r)
}

func TestEventsDuringASyncAreReplayed(t *testing.T) {
	// Covered in routingtable.TestSync ("events during the sync are replayed"); here the
	// watcher caches an event that arrives between the fetch and the swap.
	bbs := newFakeBBS()
	em := &fakeEmitter{}
	w := New(bbs, em, Options{SyncInterval: time.Hour, Timeout: time.Second})
	w.mu.Lock()
	w.syncing = true
	w.mu.Unlock()
	w.handle(t.Context(), created(desired(t)))
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Len(t, w.cached, 1)
}

// TestSyncRegistrationsArePacedEventOnesAreNot: a sync hands its registrations to the
// paced sender and its unregistrations to the immediate one; events go out at once. A
// fresh start (nothing loaded) needs no broadcast after its first sync; a start with a
// loaded table does.
func TestSyncRegistrationsArePacedEventOnesAreNot(t *testing.T) {
	dir := t.TempDir()
	bbs := newFakeBBS()
	bbs.desired = []*modelsv1.DesiredLRPRoutingInfo{{ProcessGuid: "web", Domain: "cf-apps", LogGuid: "app", Instances: 2,
		Routes: desired(t).Routes, ModificationTag: desired(t).ModificationTag}}
	bbs.actuals = []*modelsv1.ActualLRP{actual(0)}
	em := &fakeEmitter{}
	w, p := start(t, bbs, em, filepath.Join(dir, "state.json"))
	require.Eventually(t, func() bool { return w.Status().Synced }, waitFor, pollEvery)
	bulk, broadcasts := em.paced()
	assert.Equal(t, []int{1, 0}, []int{bulk, broadcasts}, "the first sync's registration is paced; no broadcast after a fresh start")

	bbs.publish(created(actual(1)))
	require.Eventually(t, func() bool { r, _ := em.counts(); return r == 2 }, waitFor, pollEvery)
	bulk, _ = em.paced()
	assert.Equal(t, 1, bulk, "an event's registration goes out at once")

	// The BBS lost instance 0 without an event: the next sync unregisters it at once.
	bbs.mu.Lock()
	bbs.actuals = []*modelsv1.ActualLRP{actual(1)}
	bbs.mu.Unlock()
	require.NoError(t, w.Sync(t.Context()))
	r, u := em.counts()
	bulk, _ = em.paced()
	assert.Equal(t, []int{2, 1, 1}, []int{r, u, bulk})

	// A restart with the saved table asks for a broadcast after its first sync.
	p.Signal(os.Interrupt)
	<-p.Wait()
	em2 := &fakeEmitter{}
	w2, _ := start(t, bbs, em2, filepath.Join(dir, "state.json"))
	require.Eventually(t, func() bool { return w2.Status().Synced }, waitFor, pollEvery)
	require.Eventually(t, func() bool { _, b := em2.paced(); return b == 1 }, waitFor, pollEvery, "broadcast of the loaded routes")
}
