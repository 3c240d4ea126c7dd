package harmonizer

import (
	"context"
	"os"
	"time"

	"drover.dev/executor"
)

// resubscribeDelay is the pause before subscribing again after the executor's event
// stream ended.
const resubscribeDelay = time.Second

// Run is the harmonizer as an ifrit member: it subscribes to executor events, becomes
// ready, syncs once at once and then every polling interval, and on a signal stops
// taking operations and waits for the running ones. When the cell starts evacuating it
// syncs at once and then every evacuation polling interval.
func (h *Harmonizer) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := NewQueue(ctx, h.cfg.Workers)
	events, err := h.exec.Subscribe(ctx)
	if err != nil {
		return err
	}
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		h.consume(ctx, q, events)
	}()
	close(ready)
	h.logger.Info("harmonizer-started", "polling_interval", h.cfg.PollingInterval.String())

	var evacuationStarted <-chan struct{}
	if h.cfg.Evacuation != nil {
		evacuationStarted = h.cfg.Evacuation.Started()
	}
	h.Sync(ctx, q)
	ticker := time.NewTicker(h.cfg.PollingInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			h.Sync(ctx, q)
		case <-evacuationStarted:
			evacuationStarted = nil
			ticker.Reset(h.cfg.EvacuationPollingInterval)
			h.logger.Info("harmonizer-evacuating", "polling_interval", h.cfg.EvacuationPollingInterval.String())
			h.Sync(ctx, q)
		case <-signals:
			cancel()
			<-consumerDone
			q.Wait()
			h.logger.Info("harmonizer-stopped")
			return nil
		}
	}
}

// consume turns every executor event into a container operation, subscribing again
// when the stream ends before ctx does.
func (h *Harmonizer) consume(ctx context.Context, q *Queue, events <-chan executor.Event) {
	for {
		for ev := range events {
			h.metrics.event(string(ev.Type))
			guid := ev.Container.Guid
			q.Push(guid, func(ctx context.Context) { h.ProcessContainer(ctx, guid) })
		}
		if ctx.Err() != nil {
			return
		}
		h.logger.Error("executor-event-stream-ended")
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(resubscribeDelay):
			}
			var err error
			if events, err = h.exec.Subscribe(ctx); err == nil {
				break
			}
			h.logger.Error("failed-to-resubscribe", "error", err.Error())
		}
	}
}
