package watcher

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/route-emitter/routingtable"
)

// actualAt is instance 0 at modification tag index tag on host port port.
func actualAt(tag uint32, port uint32) *modelsv1.ActualLRP {
	a := actual(0)
	a.ModificationTag = &modelsv1.ModificationTag{Epoch: "a", Index: tag}
	a.NetInfo = &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: port}}}
	return a
}

// changed is the event of a's row changing from before to after.
func changed(before, after *modelsv1.ActualLRP) *modelsv1.Event {
	info := func(a *modelsv1.ActualLRP) *modelsv1.ActualLRPInfo {
		return &modelsv1.ActualLRPInfo{NetInfo: a.NetInfo, State: a.State, ModificationTag: a.ModificationTag,
			Presence: a.Presence, Routable: a.Routable}
	}
	return &modelsv1.Event{Payload: &modelsv1.Event_ActualLrpInstanceChanged{ActualLrpInstanceChanged: &modelsv1.ActualLRPInstanceChangedEvent{
		ActualLrpKey:         &modelsv1.ActualLRPKey{ProcessGuid: after.ProcessGuid, Index: after.Index, Domain: after.Domain},
		ActualLrpInstanceKey: &modelsv1.ActualLRPInstanceKey{InstanceGuid: after.InstanceGuid, CellId: after.CellId},
		Before:               info(before), After: info(after),
	}}}
}

// endpointPorts lists the host ports of the table's endpoints.
func endpointPorts(w *Watcher) []uint32 {
	var ports []uint32
	for _, r := range w.Routes(routingtable.Filter{}) {
		for _, e := range r.GetEndpoints() {
			ports = append(ports, e.GetPort())
		}
	}
	return ports
}

// TestAnEventBetweenTheSyncReadAndTheStreamStartIsApplied: the BBS admits the
// subscription only after the first sync has read, and an instance starts in between.
// The stream starts after that event and the sync read before it, so the sync that
// reads too early is done again once the stream starts: the route is registered without
// waiting for the next periodic sync (an hour here).
func TestAnEventBetweenTheSyncReadAndTheStreamStartIsApplied(t *testing.T) {
	bbs := newFakeBBS()
	bbs.desired = []*modelsv1.DesiredLRPRoutingInfo{routingInfo(t)}
	bbs.admit = make(chan struct{})
	bbs.listed = sync.OnceFunc(func() {
		bbs.setActuals(actual(0))
		bbs.publish(created(actual(0)))
		close(bbs.admit)
	})
	em := &fakeEmitter{}
	w := New(bbs, em, Options{SyncInterval: time.Hour, Timeout: 50 * time.Millisecond})
	invoke(t, bbs, w)

	require.Eventually(t, func() bool { r, _ := em.counts(); return r == 1 }, waitFor, pollEvery, "the started instance's route is registered")
	assert.Equal(t, []uint32{61000}, endpointPorts(w))
	assert.Equal(t, []int{0, 1}, bbs.admissionsAtLists(), "the early sync is done again once the stream started")
	assert.Equal(t, uint64(1), w.Status().LastSequence, "the cursor is the start the BBS named")
}

// TestTheSyncReadsOnceTheStreamStarted: a sync without a cursor reads only once the
// BBS admitted the subscription, so an event committed right after the read is after
// the stream's start and is delivered.
func TestTheSyncReadsOnceTheStreamStarted(t *testing.T) {
	bbs := newFakeBBS()
	bbs.desired = []*modelsv1.DesiredLRPRoutingInfo{routingInfo(t)}
	bbs.listed = sync.OnceFunc(func() {
		bbs.setActuals(actual(0))
		bbs.publish(created(actual(0)))
	})
	em := &fakeEmitter{}
	w := New(bbs, em, Options{SyncInterval: time.Hour, Timeout: time.Hour})
	invoke(t, bbs, w)

	require.Eventually(t, func() bool { r, _ := em.counts(); return r == 1 && w.Status().LastSequence == 1 },
		waitFor, pollEvery, "the event after the read is delivered")
	assert.Equal(t, []int{1}, bbs.admissionsAtLists(), "one sync, after the admission")
	assert.Equal(t, []uint32{61000}, endpointPorts(w))
}

// TestEventsTheSyncReadAlreadyReflectsChangeNothing: events committed after the
// stream's start and before the sync's read reach the watcher after the sync (the
// stream lags); their older after-states do not undo the newer state the sync read.
func TestEventsTheSyncReadAlreadyReflectsChangeNothing(t *testing.T) {
	bbs := newFakeBBS()
	bbs.desired = []*modelsv1.DesiredLRPRoutingInfo{routingInfo(t)}
	v1, v2 := actualAt(1, 61000), actualAt(2, 62000) // the instance moved to another port
	bbs.onAdmit = sync.OnceFunc(func() {
		bbs.publish(created(v1))
		bbs.publish(changed(v1, v2))
		bbs.setActuals(v2)
	})
	release := bbs.holdEvents()
	em := &fakeEmitter{}
	w := New(bbs, em, Options{SyncInterval: time.Hour, Timeout: time.Hour})
	invoke(t, bbs, w)
	require.Eventually(t, func() bool { return w.Status().Synced }, waitFor, pollEvery)
	require.Equal(t, []uint32{62000}, endpointPorts(w), "the sync read the moved instance")

	release()
	require.Eventually(t, func() bool { return w.Status().LastSequence == 2 }, waitFor, pollEvery, "both events applied")
	assert.Equal(t, []uint32{62000}, endpointPorts(w))
	r, u := em.counts()
	assert.Equal(t, []int{1, 0}, []int{r, u}, "the sync's registration only: the older events changed nothing")
	assert.Equal(t, []int{1}, bbs.admissionsAtLists())
}
