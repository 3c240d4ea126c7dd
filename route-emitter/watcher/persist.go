package watcher

import (
	"encoding/json"
)

// load reads the state file and the journals not covered by it (when there is a state
// file): the table, the cursor and what the previous process published.
func (w *Watcher) load() {
	if w.opts.StateFile == "" {
		return
	}
	p, err := loadPersisted(w.opts.StateFile)
	if err != nil {
		w.log.Error("state-file-unreadable", "error", err.Error())
	}
	if p.skipped > 0 {
		w.log.Error("journal-lines-skipped", "lines", p.skipped)
	}
	if err := removeJournalsBefore(w.opts.StateFile, p.state.JournalEpoch); err != nil {
		w.log.Error("journal-remove-failed", "error", err.Error())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.table, w.cursor = p.state.Table, p.state.Sequence
	if w.cursor != nil {
		w.streamStarted() // events after the cursor are replayed, whenever the stream starts
	}
	w.pending = p.published
	w.journal = &journal{base: w.opts.StateFile, epoch: p.nextEpoch}
	w.dirty = p.replayed > 0
	w.log.Info("state-loaded", "routes", p.state.Table.RouteCount(), "sequence", seqAttr(p.state.Sequence),
		"journals", p.replayed, "published", len(p.published))
}

// closeJournal closes the journal's file.
func (w *Watcher) closeJournal() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.journal != nil {
		w.journal.close()
	}
}

// save writes the state file when something changed and reports whether it wrote.
// Under the lock it takes a copy of the table and the cursor and moves the journal to
// the next epoch; outside it, it marshals, writes the file (recording that epoch as the
// first not covered) and deletes the journals the snapshot covers. Events applied
// after the copy are journaled in the new epoch and replayed from the cursor after a
// crash (re-applying one the copy holds changes nothing: modification tags).
func (w *Watcher) save() bool {
	if w.journal == nil {
		return false
	}
	w.mu.Lock()
	if !w.dirty {
		w.mu.Unlock()
		return false
	}
	st := state{Sequence: w.cursor, Table: w.table.Clone(), JournalEpoch: w.journal.rotate()}
	if w.pending != nil {
		st.Published = w.pending.list()
	}
	w.dirty = false
	w.mu.Unlock()
	data, err := json.Marshal(st)
	if err == nil {
		err = saveState(w.opts.StateFile, data)
	}
	if err != nil {
		w.log.Error("state-save-failed", "error", err.Error())
		w.mu.Lock()
		w.dirty = true
		w.mu.Unlock()
		return false
	}
	if err := removeJournalsBefore(w.opts.StateFile, st.JournalEpoch); err != nil {
		w.log.Error("journal-remove-failed", "error", err.Error())
	}
	return true
}
