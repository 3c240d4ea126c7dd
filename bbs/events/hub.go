// Package events fans the BBS event log out to subscribers. Events live in Postgres
// (appended by every write in its own transaction, numbered in commit order); the Hub
// only learns that new ones exist (LISTEN/NOTIFY, with polling as a fallback) and wakes
// its subscribers, each of which reads the log from its own cursor at its own pace. A
// slow subscriber therefore never blocks writers or other subscribers, several BBS
// replicas deliver the same sequence, and a subscriber can resume after any sequence
// that is still retained.
package events

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/bbs/store"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Defaults of HubOptions.
const (
	DefaultRetention     = 24 * time.Hour
	DefaultKeepEvents    = 100000
	DefaultPruneInterval = time.Minute
	DefaultPollInterval  = time.Second
	DefaultPageSize      = 1000
)

// listenRetryDelay is how long Run waits before listening again after WaitForEvents failed.
const listenRetryDelay = time.Second

// HubOptions tune retention and polling; zero values take the defaults.
type HubOptions struct {
	// Retention is how long events are kept (default 24h).
	Retention time.Duration
	// KeepEvents is how many of the newest events are kept regardless of age (default 100000).
	KeepEvents int
	// PruneInterval is how often old events are pruned (default 1m).
	PruneInterval time.Duration
	// PollInterval is how often the newest sequence is polled in case a notification
	// was missed (default 1s).
	PollInterval time.Duration
	// PageSize is how many events a subscriber reads from the database at once (default 1000).
	PageSize int
	// Registerer receives the hub's metrics; nil registers none.
	Registerer prometheus.Registerer
}

func (o HubOptions) withDefaults() HubOptions {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.KeepEvents <= 0 {
		o.KeepEvents = DefaultKeepEvents
	}
	if o.PruneInterval <= 0 {
		o.PruneInterval = DefaultPruneInterval
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	return o
}

// Hub wakes subscribers when new events are committed and prunes old events.
type Hub struct {
	db      store.EventDB
	opts    HubOptions
	logger  *slog.Logger
	metrics *hubMetrics

	mu     sync.Mutex
	latest uint64
	// wake is closed (and replaced) whenever latest grows: a broadcast to every waiter.
	wake chan struct{}
}

// NewHub makes a hub over the event log; call Run to start listening and pruning.
func NewHub(db store.EventDB, opts HubOptions, logger *slog.Logger) *Hub {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts = opts.withDefaults()
	return &Hub{
		db:      db,
		opts:    opts,
		logger:  logger.With("component", "event-hub"),
		metrics: newHubMetrics(opts.Registerer),
		wake:    make(chan struct{}),
	}
}

// Run listens for new events, polls as a fallback and prunes periodically, until ctx
// ends; it then returns ctx.Err().
func (h *Hub) Run(ctx context.Context) error {
	h.logger.Info("event-hub-started", "retention", h.opts.Retention.String(), "keep-events", h.opts.KeepEvents)
	defer h.logger.Info("event-hub-stopped")

	var wg sync.WaitGroup
	wg.Go(func() { h.listen(ctx) })
	wg.Go(func() { h.every(ctx, h.opts.PollInterval, h.poll) })
	wg.Go(func() { h.every(ctx, h.opts.PruneInterval, h.prune) })
	wg.Wait()
	return ctx.Err()
}

// listen runs WaitForEvents until ctx ends, starting it again after failures.
func (h *Hub) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := h.db.WaitForEvents(ctx, h.advance)
		if ctx.Err() != nil {
			return
		}
		h.logger.Error("failed-to-listen-for-events", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(listenRetryDelay):
		}
	}
}

// every calls f at once and then every interval until ctx ends.
func (h *Hub) every(ctx context.Context, interval time.Duration, f func(context.Context)) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (h *Hub) poll(ctx context.Context) {
	latest, err := h.db.LatestSequence(ctx)
	if err != nil {
		if ctx.Err() == nil {
			h.logger.Error("failed-to-poll-latest-event", "error", err)
		}
		return
	}
	h.advance(latest)
}

func (h *Hub) prune(ctx context.Context) {
	n, err := h.db.PruneEvents(ctx, h.opts.Retention, h.opts.KeepEvents)
	if err != nil {
		if ctx.Err() == nil {
			h.logger.Error("failed-to-prune-events", "error", err)
		}
		return
	}
	if n > 0 {
		h.logger.Info("pruned-events", "count", n)
	}
}

// advance records that events up to latest are committed and wakes every waiter if
// that is news.
func (h *Hub) advance(latest uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if latest <= h.latest {
		return
	}
	h.latest = latest
	close(h.wake)
	h.wake = make(chan struct{})
}

// waitChannel returns the channel that the next advance closes.
func (h *Hub) waitChannel() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake
}

// Subscribe calls send, in sequence order, for every event after *after (after nil:
// only events committed from now on) that passes the cell filter, until ctx ends
// (ctx.Err()), send fails (its error) or the cursor is older than retention
// (models.ErrResyncRequired). With a cellID, instance events pass only when they
// concern that cell; desired-LRP and task events always pass.
func (h *Hub) Subscribe(ctx context.Context, after *uint64, cellID string, send func(*modelsv1.Event) error) error {
	if send == nil {
		return errors.New("events: subscribe without a send function")
	}
	cursor, err := h.startCursor(ctx, after)
	if err != nil {
		return err
	}
	h.metrics.subscribers.Inc()
	defer h.metrics.subscribers.Dec()

	for {
		// Take the wake channel before reading so that an event committed after the
		// read still wakes us.
		wake := h.waitChannel()
		page, err := h.db.EventsAfter(ctx, cursor, h.opts.PageSize)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		for _, e := range page {
			cursor = e.GetSequence()
			if !passesCellFilter(e, cellID) {
				continue
			}
			if err := send(e); err != nil {
				return err
			}
			h.metrics.delivered.Inc()
		}
		if len(page) == h.opts.PageSize {
			continue // more to catch up on
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// startCursor is the sequence after which a subscription starts.
func (h *Hub) startCursor(ctx context.Context, after *uint64) (uint64, error) {
	if after != nil {
		return *after, nil
	}
	latest, err := h.db.LatestSequence(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	return latest, nil
}
