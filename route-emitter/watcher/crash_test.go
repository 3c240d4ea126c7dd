package watcher

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/route-emitter/routingtable"
)

const (
	route0 = "a.example.com 10.0.0.1:61000"
	route1 = "a.example.com 10.0.0.1:61001"
)

// startManual runs a watcher that saves only when the test calls save (and at stop).
func startManual(t *testing.T, bbs *fakeBBS, em *fakeEmitter, stateFile string) *Watcher {
	t.Helper()
	w := New(bbs, em, Options{SyncInterval: time.Hour, Timeout: time.Second, StateFile: stateFile, SaveDelay: time.Hour})
	invoke(t, bbs, w)
	return w
}

// crashCopy copies the state file and the journals of live to crashed, as a kill -9
// would leave them.
func crashCopy(t *testing.T, live, crashed string) {
	t.Helper()
	cp := func(from, to string) {
		data, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, data, 0o600))
	}
	if _, err := os.Stat(live); err == nil {
		cp(live, crashed)
	}
	epochs, err := journalEpochs(live)
	require.NoError(t, err)
	for _, e := range epochs {
		cp(journalPath(live, e), journalPath(crashed, e))
	}
}

func routingInfo(t *testing.T) *modelsv1.DesiredLRPRoutingInfo {
	d := desired(t)
	return &modelsv1.DesiredLRPRoutingInfo{ProcessGuid: d.ProcessGuid, Domain: d.Domain, LogGuid: d.LogGuid,
		Instances: d.Instances, Routes: d.Routes, ModificationTag: d.ModificationTag}
}

// TestRestartUnregistersWhatTheDeadProcessPublished: a watcher is "killed" (its files
// copied while it runs) with instance 1 registered either before or after its last save;
// while it is down instance 1 goes away (or nothing happens). The restarted watcher's
// first sync unregisters exactly what is gone, whether the BBS no longer has the events
// (cursor out of range) or the sync finishes before the replayed events arrive.
func TestRestartUnregistersWhatTheDeadProcessPublished(t *testing.T) {
	tests := []struct {
		name            string
		savedInstance1  bool
		removedWhenDown bool
		outOfRange      bool
		want            []string
	}{
		{"registered after the save, removed while down, cursor out of range", false, true, true, []string{route1}},
		{"registered after the save, removed while down, sync before the replay", false, true, false, []string{route1}},
		{"registered and saved, removed while down, cursor out of range", true, true, true, []string{route1}},
		{"registered and saved, removed while down, sync before the replay", true, true, false, []string{route1}},
		{"registered after the save, nothing changed while down", false, false, true, []string{}},
		{"registered and saved, nothing changed while down", true, false, false, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			live, crashed := filepath.Join(dir, "live.json"), filepath.Join(dir, "crashed.json")
			bbs := newFakeBBS()
			em := &fakeEmitter{}
			w := startManual(t, bbs, em, live)
			require.Eventually(t, func() bool { return w.Status().Synced }, waitFor, pollEvery)
			bbs.publish(created(desired(t)))
			bbs.publish(created(actual(0)))
			if tt.savedInstance1 {
				bbs.publish(created(actual(1)))
			}
			require.Eventually(t, func() bool { return w.Status().LastSequence == bbs.lastSequence() }, waitFor, pollEvery)
			w.save()
			if !tt.savedInstance1 {
				bbs.publish(created(actual(1)))
			}
			require.Eventually(t, func() bool { r, _ := em.counts(); return r == 2 }, waitFor, pollEvery)
			crashCopy(t, live, crashed)

			bbs.mu.Lock()
			bbs.desired = []*modelsv1.DesiredLRPRoutingInfo{routingInfo(t)}
			bbs.actuals = []*modelsv1.ActualLRP{actual(0), actual(1)}
			bbs.mu.Unlock()
			if tt.removedWhenDown {
				bbs.publish(removed(actual(1)))
				bbs.mu.Lock()
				bbs.actuals = bbs.actuals[:1]
				bbs.mu.Unlock()
			}
			if tt.outOfRange {
				bbs.mu.Lock()
				bbs.oldest = uint64(len(bbs.events)) + 1 // the lock is held
				bbs.mu.Unlock()
			}
			release := bbs.holdEvents()
			t.Cleanup(release)

			em2 := &fakeEmitter{}
			w2 := startManual(t, bbs, em2, crashed)
			require.Eventually(t, func() bool { return w2.Status().Synced }, waitFor, pollEvery)
			assert.Equal(t, tt.want, em2.unregistered(), "unregistered by the first sync")

			release()
			if !tt.outOfRange {
				last := bbs.lastSequence()
				require.Eventually(t, func() bool { return w2.Status().LastSequence == last }, waitFor, pollEvery, "replayed")
			}
			wantEndpoints := 2
			if tt.removedWhenDown {
				wantEndpoints = 1
			}
			require.Eventually(t, func() bool {
				routes := w2.Routes(routingtable.Filter{})
				return len(routes) == 1 && len(routes[0].Endpoints) == wantEndpoints
			}, waitFor, pollEvery, "table after the replay")
			for _, u := range em2.unregistered() {
				assert.Equal(t, route1, u, "only the removed instance is ever unregistered")
			}
			if !tt.removedWhenDown {
				assert.NotContains(t, em2.unregistered(), route0)
			}
		})
	}
}

// TestSaveRotatesTheJournal: every save moves appends to a new epoch, records it in the
// state file and deletes the journals it covers; only the current epoch remains.
func TestSaveRotatesTheJournal(t *testing.T) {
	live := filepath.Join(t.TempDir(), "state.json")
	bbs := newFakeBBS()
	em := &fakeEmitter{}
	w := startManual(t, bbs, em, live)
	require.Eventually(t, func() bool { return w.Status().Synced }, waitFor, pollEvery)
	bbs.publish(created(desired(t)))
	var epochs []uint64
	for i := range int32(2) {
		bbs.publish(created(actual(i)))
		require.Eventually(t, func() bool { r, _ := em.counts(); return r == int(i)+1 }, waitFor, pollEvery)
		before, err := journalEpochs(live)
		require.NoError(t, err)
		require.Len(t, before, 1, "one journal holds what was published since the last save")
		w.save()
		st, err := loadState(live)
		require.NoError(t, err)
		after, err := journalEpochs(live)
		require.NoError(t, err)
		assert.Empty(t, after, "the covered journal is deleted (the next one is created on use)")
		assert.Greater(t, st.JournalEpoch, before[0])
		epochs = append(epochs, st.JournalEpoch)
	}
	assert.Less(t, epochs[0], epochs[1])
}

// TestPendingRoutesSurviveASaveBeforeTheFirstSync: what a dead process published stays
// recorded (in the state file) when the next process saves before it could sync, and the
// process after that unregisters it.
func TestPendingRoutesSurviveASaveBeforeTheFirstSync(t *testing.T) {
	base := filepath.Join(t.TempDir(), "state.json")
	gone := msg("gone.example.com", 7)
	require.NoError(t, os.WriteFile(journalPath(base, 0), journalLines(t, routingtable.Messages{Registrations: []routingtable.RegistryMessage{gone}}), 0o600))

	w := New(newFakeBBS(), &fakeEmitter{}, Options{StateFile: base})
	w.load()
	w.save()
	w.closeJournal()
	st, err := loadState(base)
	require.NoError(t, err)
	assert.Equal(t, []uint32{7}, ports(st.Published))
	epochs, err := journalEpochs(base)
	require.NoError(t, err)
	assert.Empty(t, epochs)

	em := &fakeEmitter{}
	w2 := startManual(t, newFakeBBS(), em, base)
	require.Eventually(t, func() bool { return w2.Status().Synced }, waitFor, pollEvery)
	assert.Equal(t, []string{"gone.example.com 10.0.0.1:7"}, em.unregistered())
}

// TestNoJournalWithoutAStateFile: without persistence nothing is written.
func TestNoJournalWithoutAStateFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	bbs := newFakeBBS()
	em := &fakeEmitter{}
	w := startManual(t, bbs, em, "")
	require.Eventually(t, func() bool { return w.Status().Synced }, waitFor, pollEvery)
	bbs.publish(created(desired(t)))
	bbs.publish(created(actual(0)))
	require.Eventually(t, func() bool { r, _ := em.counts(); return r == 1 }, waitFor, pollEvery)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}
