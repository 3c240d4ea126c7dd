package watcher

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v5"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	"drover.dev/route-emitter/routingtable"
)

// minSyncBackoff is the first wait before retrying a failed first sync.
const minSyncBackoff = 100 * time.Millisecond

// requestSync asks the sync loop for a sync now.
func (w *Watcher) requestSync() {
	select {
	case w.syncNow <- struct{}{}:
	default:
	}
}

// syncLoop syncs at once, every sync interval and on request; until the first success
// it retries with an exponential backoff (at most the sync interval). After it, a
// broadcast sends the loaded routes (loaded: how many the state file held) that the
// sync did not change.
func (w *Watcher) syncLoop(ctx context.Context, loaded int) {
	first := true
	retry := &backoff.ExponentialBackOff{InitialInterval: minSyncBackoff, RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier: 2, MaxInterval: w.opts.MaxBackoff}
	for {
		err := w.Sync(ctx)
		wait := w.opts.SyncInterval
		if err != nil && ctx.Err() == nil {
			w.log.Error("sync-failed", "error", err.Error())
			if first {
				wait = min(retry.NextBackOff(), wait)
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

// Sync waits for the event stream's start (awaitStream), fetches the actual LRPs, the
// routing infos and the fresh domains, builds a table of them (outside the lock),
// replays onto it the events that arrived meanwhile, and emits the difference:
// unregistrations at once, registrations paced.
func (w *Watcher) Sync(ctx context.Context) error {
	if err := w.awaitStream(ctx); err != nil {
		return err
	}
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

// awaitStream waits, at most the sync timeout, until the event stream's start is fixed,
// so that what the sync reads is no older than the stream's first event: an event
// committed between the read and a later start would be missed until the next sync.
// When the wait times out (the BBS does not admit the stream), the sync reads anyway
// and is marked early: the stream's admission asks for another.
func (w *Watcher) awaitStream(ctx context.Context) error {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	timeout := time.NewTimer(w.opts.Timeout)
	defer timeout.Stop()
	select {
	case <-started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout.C:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.started: // admitted meanwhile
		return nil
	default:
	}
	w.early = true
	w.log.Info("sync-before-event-stream-started", "waited", w.opts.Timeout.String())
	return nil
}

// fetch reads what a sync needs (local mode: this cell's instances and their routing infos).
func (w *Watcher) fetch(ctx context.Context) (routingtable.Snapshot, error) {
	var s routingtable.Snapshot
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	actuals, err := client.AllActualLRPs(ctx, w.bbs, &bbsv1.ListActualLRPsRequest{CellId: w.opts.CellID})
	if err != nil {
		return s, err
	}
	s.Actuals = actuals
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
