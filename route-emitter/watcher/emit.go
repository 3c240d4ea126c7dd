package watcher

import (
	"drover.dev/route-emitter/routingtable"
)

// publish journals msgs and hands them to the emitter to send at once. The caller
// holds w.mu.
func (w *Watcher) publish(msgs routingtable.Messages) {
	if w.record(msgs) {
		w.emit.Emit(msgs)
	}
}

// publishSync journals a sync's messages and hands them to the emitter: the
// unregistrations at once, the registrations to the paced bulk sender. The caller holds
// w.mu.
func (w *Watcher) publishSync(msgs routingtable.Messages) {
	if w.record(msgs) {
		w.emit.Emit(routingtable.Messages{Unregistrations: msgs.Unregistrations, AddressCollisions: msgs.AddressCollisions})
		w.emit.EmitBulk(msgs.Registrations)
	}
}

// record journals msgs before they are handed on (a bulk registration that a crash
// keeps from going out is harmless: the next start unregisters it or registers it again)
// and reports whether there is anything to send. The caller holds w.mu.
func (w *Watcher) record(msgs routingtable.Messages) bool {
	if msgs.Empty() {
		return false
	}
	if w.journal != nil {
		if err := w.journal.append(msgs); err != nil {
			w.log.Error("journal-append-failed", "error", err.Error())
		}
	}
	if w.pending != nil {
		w.pending.apply(msgs)
	}
	return true
}

// unregisterStale, after the first sync following a start, unregisters what the routers
// may have been told before the start and the table does not register now. The caller
// holds w.mu.
func (w *Watcher) unregisterStale() {
	if w.pending == nil {
		return
	}
	stale := w.pending.stale(w.table.Registrations())
	w.pending = nil
	w.publish(routingtable.Messages{Unregistrations: stale})
	w.log.Info("stale-routes-unregistered", "count", len(stale))
}
