package watcher

import (
	"context"
	"time"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/route-emitter/routingtable"
)

// minStreamBackoff is the first wait before subscribing again after a failure.
const minStreamBackoff = 50 * time.Millisecond

// stream applies the events after the cursor. The subscription resumes after the last
// event applied whatever the error, with backoff (client.Subscribe); OUT_OF_RANGE
// forgets the cursor, asks for a full sync and subscribes again from the current
// sequence, which the BBS names once it admits the subscription: that becomes the
// cursor, and syncs may read from then on (streamStarted).
func (w *Watcher) stream(ctx context.Context) {
	for {
		w.mu.Lock()
		after := w.cursor
		w.mu.Unlock()
		err := client.Subscribe(ctx, w.bbs, client.Subscription{
			After: after, CellID: w.opts.CellID, MinBackoff: minStreamBackoff, MaxBackoff: w.opts.MaxBackoff,
			Retryable: func(error) bool { return true },
			OnSubscribed: func(req *bbsv1.SubscribeRequest, start *uint64) {
				w.log.Info("event-stream-subscribed", "after", seqAttr(start), "cell_id", req.CellId)
				w.mu.Lock()
				defer w.mu.Unlock()
				if w.cursor == nil && start != nil {
					w.cursor, w.dirty = start, true
				}
				w.streamStarted()
			},
			OnRetry: func(err error, _ *uint64, wait time.Duration) {
				w.log.Error("event-stream-failed", "error", err.Error(), "retry_in", wait.String())
			},
		}, func(e *modelsv1.Event) error {
			w.handle(ctx, e)
			return nil
		})
		if !client.IsResyncRequired(err) {
			return // ctx ended: every other error is retried
		}
		w.log.Info("event-cursor-out-of-range", "error", err.Error())
		w.mu.Lock()
		w.cursor, w.started = nil, make(chan struct{})
		w.mu.Unlock()
		w.requestSync()
	}
}

// streamStarted records that the stream's start is fixed: syncs may read from now on,
// and one that read earlier is done again. The caller holds w.mu.
func (w *Watcher) streamStarted() {
	select {
	case <-w.started:
		return
	default:
	}
	close(w.started)
	if w.early {
		w.early = false
		w.requestSync()
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
