// Package watcher feeds the routing table from the BBS: the resumable event stream
// (from the last applied sequence, kept with the table in the state file), a full sync
// at start, after OUT_OF_RANGE and every sync interval (events during a sync are cached
// and replayed onto the fresh table), and reconnects with backoff whatever the error.
//
// A sync reads only once the stream's start is fixed (a cursor, or a subscription the
// BBS admitted, which names the sequence it starts after), so that no event falls
// between what the sync read and what the stream delivers: the events after the start
// that the sync's read already reflects carry after-states the table's modification
// tags tell from newer ones, and applying them in commit order converges. If the BBS
// does not admit the stream within the sync timeout, the sync reads anyway and the
// stream's admission asks for another.
//
// What it hands to the emitter is journaled next to the state file before it is sent, so
// a process killed between two saves leaves a record of what the routers were told: the
// next start unregisters, after its first sync, whatever of that the table no longer
// registers. Each save rotates the journal and deletes the ones the snapshot covers.
//
// The files: watcher.go the type and its life cycle, stream.go the events (through
// bbs/client.Subscribe), sync.go the full syncs, emit.go what goes to the emitter,
// persist.go the state file, with state.go, journal.go and published.go beneath it.
package watcher

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"

	"drover.dev/bbs/client"
	"drover.dev/lib/logging"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
	"drover.dev/route-emitter/emitter"
	"drover.dev/route-emitter/metrics"
	"drover.dev/route-emitter/routingtable"
)

// BBS is the part of the BBS client the watcher uses.
type BBS interface {
	client.EventSubscriber
	client.ActualLRPLister
	ListDesiredLRPRoutingInfos(ctx context.Context, in *bbsv1.ListDesiredLRPRoutingInfosRequest, opts ...grpc.CallOption) (*bbsv1.ListDesiredLRPRoutingInfosResponse, error)
	ListDomains(ctx context.Context, in *bbsv1.ListDomainsRequest, opts ...grpc.CallOption) (*bbsv1.ListDomainsResponse, error)
}

// Emitter is where the watcher sends messages: Emit at once, EmitBulk paced.
type Emitter interface {
	Emit(routingtable.Messages)
	EmitBulk([]routingtable.RegistryMessage)
	RequestBroadcast()
	SetSource(emitter.Source)
}

// Options configure a Watcher.
type Options struct {
	// CellID selects local mode: this cell's instances only.
	CellID       string
	SyncInterval time.Duration
	// Timeout bounds each BBS call of a sync, and the sync's wait for the event stream
	// to start (see awaitStream).
	Timeout time.Duration
	// StateFile keeps the cursor and the table; empty = none.
	StateFile string
	// SaveDelay debounces state file writes (default 1 s). Saves are also spaced by
	// saveCostFactor times the cost of the last one, so that saving a large table takes a
	// small share of the time (the journal covers what was published in between).
	SaveDelay time.Duration
	// MaxBackoff bounds the wait between stream reconnects (default 5 s).
	MaxBackoff time.Duration
	Logger     *slog.Logger
	Metrics    *metrics.Metrics
}

// saveCostFactor spaces state saves by this many times the cost of the last one.
const saveCostFactor = 20

// Watcher keeps the routing table current. Its methods are safe for concurrent use.
type Watcher struct {
	bbs  BBS
	emit Emitter
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	table   *routingtable.Table
	cursor  *uint64
	syncing bool
	cached  []*modelsv1.Event
	// started is closed once the stream's start is fixed: a cursor from the state file
	// or an admitted subscription. OUT_OF_RANGE replaces it with an open one.
	started chan struct{}
	// early is set when a sync read before the stream's start was fixed: the stream's
	// admission then asks for another sync.
	early    bool
	lastSync time.Time
	dirty    bool
	active   bool
	// lastSave and saveCost (how long it took) space saves (Run's goroutine only).
	lastSave time.Time
	saveCost time.Duration
	// journal records what is handed to the emitter (nil without a state file).
	journal *journal
	// pending is what the routers may have been told before this start, kept until the
	// first sync unregisters what the table no longer registers (nil: nothing pending).
	pending publishedSet

	syncNow chan struct{}
}

// New returns a watcher; Run loads the state file and starts it.
func New(bbs BBS, emit Emitter, opts Options) *Watcher {
	if opts.SaveDelay <= 0 {
		opts.SaveDelay = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	return &Watcher{bbs: bbs, emit: emit, opts: opts, log: logging.OrDiscard(opts.Logger).With("component", "watcher"),
		table: routingtable.New(), started: make(chan struct{}), syncNow: make(chan struct{}, 1)}
}

// Run loads the state file, is ready at once (it keeps running while the BBS is down),
// streams events, syncs, and saves the state until signalled.
func (w *Watcher) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	w.load()
	defer w.closeJournal()
	w.mu.Lock()
	w.active = true
	loaded := w.table.RouteCount()
	w.mu.Unlock()
	w.emit.SetSource(w.registrations)
	defer w.emit.SetSource(nil)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.stream(ctx) }()
	go func() { defer wg.Done(); w.syncLoop(ctx, loaded) }()
	close(ready)

	save := time.NewTicker(w.opts.SaveDelay)
	defer save.Stop()
	for {
		select {
		case <-signals:
			cancel()
			wg.Wait()
			w.save()
			return nil
		case <-save.C:
			if time.Since(w.lastSave) >= saveCostFactor*w.saveCost {
				start := time.Now()
				if w.save() {
					w.lastSave, w.saveCost = time.Now(), time.Since(start)
				}
			}
			w.updateRouteCount()
		}
	}
}

// seqAttr is a cursor as a log attribute.
func seqAttr(s *uint64) any {
	if s == nil {
		return "none"
	}
	return *s
}

// registrations is the emitter's re-broadcast source: built from a copy of the table
// taken under the lock, outside it.
func (w *Watcher) registrations() []routingtable.RegistryMessage {
	return w.snapshot().Registrations()
}

// snapshot is a read-only copy of the table (cheap: see routingtable.Table.Clone).
func (w *Watcher) snapshot() *routingtable.Table {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.table.Clone()
}

// updateRouteCount sets the routes gauge (once a tick: counting walks the table).
func (w *Watcher) updateRouteCount() {
	if w.opts.Metrics == nil {
		return
	}
	w.mu.Lock()
	n := w.table.RouteCount()
	w.mu.Unlock()
	w.opts.Metrics.Routes(n)
}

// Status is what ListRoutes reports besides the routes.
type Status struct {
	Active       bool
	Synced       bool
	LastSequence uint64
	LastSyncAt   int64
}

// Status reports the watcher's state.
func (w *Watcher) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := Status{Active: w.active, Synced: !w.lastSync.IsZero()}
	if w.cursor != nil {
		st.LastSequence = *w.cursor
	}
	if st.Synced {
		st.LastSyncAt = w.lastSync.UnixNano()
	}
	return st
}

// Routes lists the table (empty while standby).
func (w *Watcher) Routes(f routingtable.Filter) []*routeemitterv1.Route {
	w.mu.Lock()
	if !w.active {
		w.mu.Unlock()
		return nil
	}
	t := w.table.Clone()
	w.mu.Unlock()
	return t.Routes(f)
}
