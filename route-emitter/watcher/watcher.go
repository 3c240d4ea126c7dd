// Package watcher feeds the routing table from the BBS: the resumable event stream
// (from the last applied sequence, kept with the table in the state file), a full sync
// at start, after OUT_OF_RANGE and every sync interval (events during a sync are cached
// and replayed onto the fresh table), and reconnects with backoff whatever the error.
//
// What it hands to the emitter is journaled next to the state file before it is sent, so
// a process killed between two saves leaves a record of what the routers were told: the
// next start unregisters, after its first sync, whatever of that the table no longer
// registers. Each save rotates the journal and deletes the ones the snapshot covers.
package watcher

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	Subscribe(ctx context.Context, in *bbsv1.SubscribeRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.SubscribeResponse], error)
	ListActualLRPs(ctx context.Context, in *bbsv1.ListActualLRPsRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[bbsv1.ListActualLRPsResponse], error)
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
	// Timeout bounds each BBS call of a sync.
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

	mu       sync.Mutex
	table    *routingtable.Table
	cursor   *uint64
	syncing  bool
	cached   []*modelsv1.Event
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
		table: routingtable.New(), syncNow: make(chan struct{}, 1)}
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

// stream subscribes from the cursor and applies events; any error reconnects after a
// backoff, OUT_OF_RANGE forgets the cursor and asks for a full sync.
func (w *Watcher) stream(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		w.mu.Lock()
		req := &bbsv1.SubscribeRequest{AfterSequence: w.cursor, CellId: w.opts.CellID}
		w.mu.Unlock()
		received, err := w.subscribe(ctx, req)
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.OutOfRange {
			w.log.Info("event-cursor-out-of-range", "error", err.Error())
			w.mu.Lock()
			w.cursor = nil
			w.mu.Unlock()
			w.requestSync()
			continue
		}
		w.log.Error("event-stream-failed", "error", errString(err))
		if received {
			backoff = 50 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, w.opts.MaxBackoff)
	}
}

func errString(err error) string {
	if err == nil {
		return "stream ended"
	}
	return err.Error()
}

// subscribe runs one subscription until it fails; received tells whether any event came.
func (w *Watcher) subscribe(ctx context.Context, req *bbsv1.SubscribeRequest) (received bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := w.bbs.Subscribe(ctx, req)
	if err != nil {
		return false, err
	}
	w.log.Info("event-stream-subscribed", "after", seqAttr(req.AfterSequence), "cell_id", req.CellId)
	for {
		resp, err := s.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("event stream ended")
			}
			return received, err
		}
		received = true
		w.handle(ctx, resp.GetEvent())
	}
}

// handle applies one event (fetching the routing info first for an instance turning
// RUNNING of a process the table does not know) and emits what it requires.
func (w *Watcher) handle(ctx context.Context, e *modelsv1.Event) {
	w.opts.Metrics.EventLag(e.GetCreatedAt(), time.Now())
	if guid, running := routingtable.RunningProcess(e); running {
		w.mu.Lock()
		known := w.table.HasDesired(guid)
		w.mu.Unlock()
		if !known {
			w.fetchDesired(ctx, guid)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs, err := w.table.ApplyEvent(e)
	if err != nil {
		w.log.Error("invalid-routes", "sequence", e.GetSequence(), "error", err.Error())
	}
	if w.syncing {
		w.cached = append(w.cached, e)
	}
	seq := e.GetSequence()
	w.cursor = &seq
	w.dirty = true
	w.publish(msgs)
}

// fetchDesired loads the routing info of one process into the table.
func (w *Watcher) fetchDesired(ctx context.Context, guid string) {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	resp, err := w.bbs.ListDesiredLRPRoutingInfos(ctx, &bbsv1.ListDesiredLRPRoutingInfosRequest{ProcessGuids: []string{guid}})
	if err != nil {
		w.log.Error("fetch-routing-info-failed", "process_guid", guid, "error", err.Error())
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, info := range resp.GetRoutingInfos() {
		d, err := routingtable.DesiredFromRoutingInfo(info)
		if err != nil {
			w.log.Error("invalid-routes", "process_guid", guid, "error", err.Error())
		}
		w.publish(w.table.SetDesired(d))
	}
}

// requestSync asks the sync loop for a sync now.
func (w *Watcher) requestSync() {
	select {
	case w.syncNow <- struct{}{}:
	default:
	}
}

// syncLoop syncs at once, every sync interval and on request; until the first success
// it retries with a backoff. After it, a broadcast sends the loaded routes (loaded: how
// many the state file held) that the sync did not change.
func (w *Watcher) syncLoop(ctx context.Context, loaded int) {
	first := true
	retry := 100 * time.Millisecond
	for {
		err := w.Sync(ctx)
		wait := w.opts.SyncInterval
		if err != nil && ctx.Err() == nil {
			w.log.Error("sync-failed", "error", err.Error())
			if first {
				wait = min(retry, wait)
				retry = min(2*retry, w.opts.MaxBackoff)
			}
		} else if err == nil && first {
			first = false
			if loaded > 0 {
				// Routes loaded from the state file that the sync did not change reach the
				// routers (a fresh start's sync registered everything already).
				w.emit.RequestBroadcast()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		case <-w.syncNow:
		}
	}
}

// Sync fetches the actual LRPs, the routing infos and the fresh domains, builds a table
// of them (outside the lock), replays onto it the events that arrived meanwhile, and
// emits the difference: unregistrations at once, registrations paced.
func (w *Watcher) Sync(ctx context.Context) error {
	start := time.Now()
	w.mu.Lock()
	w.syncing, w.cached = true, nil
	w.mu.Unlock()
	snapshot, err := w.fetch(ctx)
	var fresh *routingtable.Table
	var buildErr error
	if err == nil {
		fresh, buildErr = routingtable.Build(snapshot)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.syncing = false
	if err != nil {
		w.cached = nil
		return err
	}
	snapshot.Events, w.cached = w.cached, nil
	msgs, err := w.table.SyncTo(fresh, snapshot.Events, snapshot.FreshDomains)
	if err = errors.Join(buildErr, err); err != nil {
		w.log.Error("invalid-routes", "error", err.Error())
	}
	w.publishSync(msgs)
	w.unregisterStale()
	w.lastSync, w.dirty = time.Now(), true
	w.opts.Metrics.SyncDuration(time.Since(start))
	w.opts.Metrics.Routes(w.table.RouteCount())
	w.log.Info("synced", "desired", len(snapshot.Desired), "actuals", len(snapshot.Actuals),
		"registrations", len(msgs.Registrations), "unregistrations", len(msgs.Unregistrations), "duration", time.Since(start).String())
	return nil
}

// fetch reads what a sync needs (local mode: this cell's instances and their routing infos).
func (w *Watcher) fetch(ctx context.Context) (routingtable.Snapshot, error) {
	var s routingtable.Snapshot
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	stream, err := w.bbs.ListActualLRPs(ctx, &bbsv1.ListActualLRPsRequest{CellId: w.opts.CellID})
	if err != nil {
		return s, err
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s, err
		}
		s.Actuals = append(s.Actuals, resp.GetActualLrps()...)
	}
	req := &bbsv1.ListDesiredLRPRoutingInfosRequest{}
	if w.opts.CellID != "" {
		seen := map[string]bool{}
		for _, a := range s.Actuals {
			if !seen[a.GetProcessGuid()] {
				seen[a.GetProcessGuid()] = true
				req.ProcessGuids = append(req.ProcessGuids, a.GetProcessGuid())
			}
		}
	}
	if w.opts.CellID == "" || len(req.ProcessGuids) > 0 {
		infos, err := w.bbs.ListDesiredLRPRoutingInfos(ctx, req)
		if err != nil {
			return s, err
		}
		s.Desired = infos.GetRoutingInfos()
	}
	domains, err := w.bbs.ListDomains(ctx, &bbsv1.ListDomainsRequest{})
	if err != nil {
		return s, err
	}
	s.FreshDomains = domains.GetDomains()
	return s, nil
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
