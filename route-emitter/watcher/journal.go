package watcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"drover.dev/route-emitter/routingtable"
)

// Journal operations.
const (
	opRegister   = "register"
	opUnregister = "unregister"
)

// journalEntry is one line of a journal: a message handed to the emitter.
type journalEntry struct {
	Op  string                       `json:"op"`
	Msg routingtable.RegistryMessage `json:"msg"`
}

// journal appends every message handed to the emitter to <state file>.journal.<epoch>,
// one write(2) per batch and no fsync (a killed process leaves its writes in the page
// cache). Saving the state moves appends to the next epoch. Not safe for concurrent use
// (the watcher's lock guards it).
type journal struct {
	base  string
	epoch uint64
	f     *os.File
}

// journalPath is the file of epoch next to the state file base.
func journalPath(base string, epoch uint64) string {
	return base + ".journal." + strconv.FormatUint(epoch, 10)
}

// encodeJournal renders msgs as journal lines (registrations first, the order of Emit).
func encodeJournal(msgs routingtable.Messages) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, batch := range []struct {
		op   string
		msgs []routingtable.RegistryMessage
	}{{opRegister, msgs.Registrations}, {opUnregister, msgs.Unregistrations}} {
		for _, m := range batch.msgs {
			if err := enc.Encode(journalEntry{Op: batch.op, Msg: m}); err != nil {
				return nil, err
			}
		}
	}
	return buf.Bytes(), nil
}

// append writes msgs to the current epoch's file, creating it on first use.
func (j *journal) append(msgs routingtable.Messages) error {
	data, err := encodeJournal(msgs)
	if err != nil || len(data) == 0 {
		return err
	}
	if j.f == nil {
		f, err := os.OpenFile(journalPath(j.base, j.epoch), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		j.f = f
	}
	_, err = j.f.Write(data)
	return err
}

// rotate closes the current file and moves appends to the next epoch, which it returns:
// the first epoch a state saved now does not cover.
func (j *journal) rotate() uint64 {
	j.close()
	j.epoch++
	return j.epoch
}

// close closes the current file (appends reopen it).
func (j *journal) close() {
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
}

// journalEpochs lists the epochs of the journals next to base, ascending.
func journalEpochs(base string) ([]uint64, error) {
	prefix := filepath.Base(base) + ".journal."
	entries, err := os.ReadDir(filepath.Dir(base))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var epochs []uint64
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() {
			continue
		}
		if n, err := strconv.ParseUint(rest, 10, 64); err == nil {
			epochs = append(epochs, n)
		}
	}
	slices.Sort(epochs)
	return epochs, nil
}

// removeJournalsBefore deletes the journals next to base older than epoch.
func removeJournalsBefore(base string, epoch uint64) error {
	epochs, err := journalEpochs(base)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range epochs {
		if e >= epoch {
			break
		}
		if err := os.Remove(journalPath(base, e)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parseJournal decodes journal lines into published; it returns the number of lines it
// skipped (torn by a crash mid-write, or otherwise unreadable).
func parseJournal(data []byte, published publishedSet) (skipped int) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e journalEntry
		if err := json.Unmarshal(line, &e); err != nil {
			skipped++
			continue
		}
		msgs := []routingtable.RegistryMessage{e.Msg}
		switch e.Op {
		case opRegister:
			published.register(msgs)
		case opUnregister:
			published.unregister(msgs)
		default:
			skipped++
		}
	}
	return skipped
}

// persisted is what a start finds on disk: the saved state, what was published, and the
// first journal epoch this process may write.
type persisted struct {
	state     state
	published publishedSet
	nextEpoch uint64
	// replayed counts the journals read; skipped their unreadable lines.
	replayed, skipped int
}

// loadPersisted reads the state file (missing or unreadable: empty, with the error) and
// replays, in epoch order, every journal it does not cover onto the published set,
// which starts from the saved table's registrations and the saved pending set.
func loadPersisted(base string) (persisted, error) {
	st, stateErr := loadState(base)
	p := persisted{state: st, published: newPublishedSet(st.Table.Registrations()), nextEpoch: st.JournalEpoch}
	p.published.register(st.Published)
	epochs, err := journalEpochs(base)
	if err != nil {
		return p, errors.Join(stateErr, fmt.Errorf("journals of %s: %w", base, err))
	}
	var errs []error
	for _, e := range epochs {
		if e < st.JournalEpoch {
			continue
		}
		p.nextEpoch = max(p.nextEpoch, e+1)
		data, err := os.ReadFile(journalPath(base, e))
		if err != nil {
			errs = append(errs, fmt.Errorf("journal %s: %w", journalPath(base, e), err))
			continue
		}
		p.replayed++
		p.skipped += parseJournal(data, p.published)
	}
	return p, errors.Join(append([]error{stateErr}, errs...)...)
}
