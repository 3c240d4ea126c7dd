// Package crashlogs keeps the last output of crashed LRP instances for a while after
// their containers are deleted, so that "droverctl logs --previous" can show why an
// instance died although its replacement already runs. Everything is bounded: lines
// and bytes per instance, instances, total bytes and age. It does no I/O.
package crashlogs

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"drover.dev/executor"
)

// Defaults of Options.
const (
	DefaultMaxLines      = 200
	DefaultMaxAge        = 10 * time.Minute
	DefaultMaxEntries    = 512
	DefaultMaxEntryBytes = 256 << 10
	DefaultMaxBytes      = 16 << 20
)

// Options bound a Store; zero values take the defaults.
type Options struct {
	// MaxLines is how many last lines of a crashed instance are kept.
	MaxLines int
	// MaxAge is how long they are kept after the crash.
	MaxAge time.Duration
	// MaxEntries is how many crashed instances (process guid and index) are kept;
	// the oldest crash goes first.
	MaxEntries int
	// MaxEntryBytes bounds the text kept of one crash (the newest lines win).
	MaxEntryBytes int
	// MaxBytes bounds the text kept of all crashes (the oldest crash goes first).
	MaxBytes int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxLines <= 0 {
		o.MaxLines = DefaultMaxLines
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	o.MaxEntryBytes = min(o.MaxEntryBytes, o.MaxBytes)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Key names one instance slot: a crash replaces the kept output of the slot's
// previous crash.
type Key struct {
	ProcessGuid string
	Index       int32
}

// Entry is the kept output of one crashed instance.
type Entry struct {
	Key
	// CrashedAt is when the output was kept (the container's removal after its crash).
	CrashedAt time.Time
	// Lines are the last lines, oldest first.
	Lines []executor.LogLine
	bytes int
}

// Store is a bounded, age-limited map of crashed instances' last lines. It is safe
// for concurrent use.
type Store struct {
	opts    Options
	mu      sync.Mutex
	entries map[Key]*Entry
	bytes   int
}

// New makes an empty store.
func New(opts Options) *Store {
	return &Store{opts: opts.withDefaults(), entries: map[Key]*Entry{}}
}

// MaxLines is how many lines Keep keeps of one crash: a caller need not read more.
func (s *Store) MaxLines() int { return s.opts.MaxLines }

// Keep stores the last lines of a crashed instance, replacing what was kept of the
// same slot, and drops the oldest crashes beyond the bounds.
func (s *Store) Keep(key Key, lines []executor.LogLine) {
	if len(lines) > s.opts.MaxLines {
		lines = lines[len(lines)-s.opts.MaxLines:]
	}
	kept, size := lastLinesWithin(lines, s.opts.MaxEntryBytes)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	s.pruneLocked(now)
	s.removeLocked(key)
	s.entries[key] = &Entry{Key: key, CrashedAt: now, Lines: kept, bytes: size}
	s.bytes += size
	for len(s.entries) > 1 && (len(s.entries) > s.opts.MaxEntries || s.bytes > s.opts.MaxBytes) {
		s.removeLocked(s.oldestLocked(key))
	}
}

// Get returns the kept crashes of processGuid (of index only, when not nil), by index.
func (s *Store) Get(processGuid string, index *int32) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(s.opts.Now())
	var out []Entry
	for k, e := range s.entries {
		if k.ProcessGuid == processGuid && (index == nil || k.Index == *index) {
			c := *e
			c.Lines = slices.Clone(e.Lines)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// Len is how many crashes are kept (expired ones included until the next call).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// lastLinesWithin keeps the newest lines whose texts add up to at most max bytes; a
// single line longer than max is cut to its last max bytes.
func lastLinesWithin(lines []executor.LogLine, max int) ([]executor.LogLine, int) {
	size, first := 0, len(lines)
	for first > 0 && size+len(lines[first-1].Text) <= max {
		first--
		size += len(lines[first].Text)
	}
	kept := slices.Clone(lines[first:])
	if len(kept) == 0 && len(lines) > 0 {
		last := lines[len(lines)-1]
		last.Text = last.Text[len(last.Text)-max:]
		return []executor.LogLine{last}, max
	}
	return kept, size
}

// pruneLocked drops the crashes older than MaxAge. s.mu must be held.
func (s *Store) pruneLocked(now time.Time) {
	for k, e := range s.entries {
		if now.Sub(e.CrashedAt) > s.opts.MaxAge {
			s.removeLocked(k)
		}
	}
}

// oldestLocked is the key of the oldest crash other than keep. s.mu must be held; the
// store holds another key than keep.
func (s *Store) oldestLocked(keep Key) Key {
	var oldest *Entry
	for k, e := range s.entries {
		if k != keep && (oldest == nil || e.CrashedAt.Before(oldest.CrashedAt)) {
			oldest = e
		}
	}
	return oldest.Key
}

// removeLocked forgets key, if kept. s.mu must be held.
func (s *Store) removeLocked(key Key) {
	if e, ok := s.entries[key]; ok {
		s.bytes -= e.bytes
		delete(s.entries, key)
	}
}
