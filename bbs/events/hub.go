// Package events fans the BBS event log out to subscribers. Events live in Postgres
// (appended by every write in its own transaction, numbered in commit order); the Hub
// only learns that new ones exist (LISTEN/NOTIFY, with polling as a fallback) and wakes
// its subscribers, each of which reads the log from its own cursor at its own pace. A
// slow subscriber therefore never blocks writers or other subscribers, several BBS
// replicas deliver the same sequence, and a subscriber can resume after any sequence
// that is still retained.
//
// What a subscriber costs is bounded: it holds at most one page of events (PageSize
// events and PageBytes of stored payload), an event that cannot be sent within
// SendTimeout ends the subscription with a SlowSubscriberError naming its cursor (the
// subscriber resumes from there, losing nothing), and each identity may hold at most
// MaxSubscribersPerIdentity subscriptions at once (TooManySubscribersError).
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
	// DefaultPageBytes bounds the stored payload bytes of one page (64 KiB, some 30
	// desired-LRP events): what a subscriber holds is about that much.
	DefaultPageBytes = 64 << 10
	// DefaultSendTimeout is how long one event may take to be sent to a subscriber.
	DefaultSendTimeout = 30 * time.Second
	// DefaultMaxSubscribersPerIdentity caps the concurrent subscriptions of one identity.
	DefaultMaxSubscribersPerIdentity = 64
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
	// PageBytes bounds the stored payload bytes of one page (default 64 KiB); a page
	// always holds at least one event.
	PageBytes int
	// SendTimeout is how long the send of one event may block before the subscription
	// ends as too slow (default 30s).
	SendTimeout time.Duration
	// MaxSubscribersPerIdentity caps the concurrent subscriptions of one identity
	// (default 64).
	MaxSubscribersPerIdentity int
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
	if o.PageBytes <= 0 {
		o.PageBytes = DefaultPageBytes
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	if o.MaxSubscribersPerIdentity <= 0 {
		o.MaxSubscribersPerIdentity = DefaultMaxSubscribersPerIdentity
	}
	return o
}

// Hub wakes subscribers when new events are committed and prunes old events.
type Hub struct {
	db        store.EventDB
	opts      HubOptions
	logger    *slog.Logger
	metrics   *hubMetrics
	admission *admission

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
		db:        db,
		opts:      opts,
		logger:    logger.With("component", "event-hub"),
		metrics:   newHubMetrics(opts.Registerer),
		admission: newAdmission(opts.MaxSubscribersPerIdentity),
		wake:      make(chan struct{}),
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

// latestSeen is the newest committed sequence the hub has heard of.
func (h *Hub) latestSeen() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest
}

// Subscription is what a subscriber asks for and who it is.
type Subscription struct {
	// After is the cursor: events after this sequence are sent. Nil means only events
	// committed from now on.
	After *uint64
	// CellID, when set, keeps only the instance events that concern that cell;
	// desired-LRP and task events always pass.
	CellID string
	// Identity is who subscribes (a certificate's common name; "" is the anonymous
	// caller of a listener without TLS). Each identity may hold at most
	// HubOptions.MaxSubscribersPerIdentity subscriptions at once.
	Identity string
	// Admitted, when set, is called once the subscription is admitted, before any event
	// is sent, with the sequence it starts after (After, or the newest sequence committed
	// then). The gRPC handler sends its response headers then, which tells a refused
	// subscription from an idle one and names the start.
	Admitted func(after uint64)
}

// Subscribe calls send, in sequence order, for every event after sub.After that passes
// the cell filter, until ctx ends (ctx.Err()), send fails (its error), one send does not
// return within SendTimeout (*SlowSubscriberError), or the cursor is older than
// retention (models.ErrResyncRequired). A subscription over the identity's cap is
// refused with *TooManySubscribersError.
//
// send runs on a goroutine of its own and must return once ctx ends (a gRPC stream's
// Send does). A subscription that was too slow keeps its place under the identity's
// cap until its last send returns, so stalled streams cannot pile up beyond the cap.
func (h *Hub) Subscribe(ctx context.Context, sub Subscription, send func(*modelsv1.Event) error) error {
	if send == nil {
		return errors.New("events: subscribe without a send function")
	}
	release, err := h.admission.admit(sub.Identity)
	if err != nil {
		h.metrics.refused.Inc()
		h.logger.Info("event-subscription-refused", "identity", identityName(sub.Identity), "error", err.Error())
		return err
	}
	defer release()
	cursor, err := h.startCursor(ctx, sub.After)
	if err != nil {
		return err
	}
	if sub.Admitted != nil {
		sub.Admitted(cursor)
	}

	out := newSender(send, h.opts.SendTimeout)
	h.metrics.subscribers.Inc()
	lastSent, err := h.stream(ctx, cursor, sub.CellID, out)
	h.metrics.subscribers.Dec()
	if !errors.Is(err, errSendTimeout) {
		out.close(ctx)
		return err
	}
	h.metrics.tooSlow.WithLabelValues(apiGRPC).Inc()
	h.logger.Info("event-subscriber-too-slow", "identity", identityName(sub.Identity),
		"last_sent", lastSent, "timeout", h.opts.SendTimeout.String())
	// The page is garbage by now; only the event in flight is held, until its send
	// returns (the subscriber read again, or left).
	if e := out.close(ctx); e != nil {
		lastSent = e.GetSequence()
	}
	return &SlowSubscriberError{Cursor: lastSent, Timeout: h.opts.SendTimeout}
}

// stream sends pages of events after cursor through out until an error; it returns the
// sequence of the last event sent (cursor if none) and the error.
func (h *Hub) stream(ctx context.Context, cursor uint64, cellID string, out *sender) (lastSent uint64, err error) {
	lastSent = cursor
	for {
		// Take the wake channel before reading so that an event committed after the
		// read still wakes us.
		wake := h.waitChannel()
		page, err := h.db.EventPage(ctx, cursor, h.opts.PageSize, h.opts.PageBytes)
		if err != nil {
			if ctx.Err() != nil {
				return lastSent, ctx.Err()
			}
			return lastSent, err
		}
		for i, e := range page {
			page[i] = nil // what was sent is garbage at once
			if passesCellFilter(e, cellID) {
				if err := out.deliver(ctx, e); err != nil {
					return lastSent, err
				}
				lastSent = e.GetSequence()
				h.metrics.delivered.Inc()
			}
			cursor = e.GetSequence()
		}
		if h.more(page, cursor) {
			continue
		}
		select {
		case <-ctx.Done():
			return lastSent, ctx.Err()
		case <-wake:
		}
	}
}

// more reports whether events after cursor are known to wait: the page was cut short
// by its count or byte bound, or newer events were announced.
func (h *Hub) more(page []*modelsv1.Event, cursor uint64) bool {
	return len(page) > 0 && (len(page) == h.opts.PageSize || cursor < h.latestSeen())
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
