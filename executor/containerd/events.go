package containerd

import (
	"context"
	"sync"
	"time"

	"drover.dev/executor"
	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"
)

// broker fans runtime events out to every Events subscriber; a full subscriber loses
// the event (the rep's periodic sync repairs that).
type broker struct {
	mu   sync.Mutex
	subs map[chan executor.RuntimeEvent]struct{}
}

func (b *broker) subscribe() chan executor.RuntimeEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[chan executor.RuntimeEvent]struct{}{}
	}
	ch := make(chan executor.RuntimeEvent, 64)
	b.subs[ch] = struct{}{}
	return ch
}

func (b *broker) unsubscribe(ch chan executor.RuntimeEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, ch)
	close(ch)
}

func (b *broker) publish(ev executor.RuntimeEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// Events delivers OOM, disk-exceeded and vanish notices until ctx ends.
func (r *Runtime) Events(ctx context.Context) <-chan executor.RuntimeEvent {
	ch := r.events.subscribe()
	go func() {
		select {
		case <-ctx.Done():
		case <-r.ctx.Done():
		}
		r.events.unsubscribe(ch)
	}()
	return ch
}

// watchEvents follows containerd's OOM, task exit and container delete events of the
// namespace, resubscribing after errors, until the runtime closes.
func (r *Runtime) watchEvents() {
	defer r.wg.Done()
	filters := []string{
		`namespace==` + r.cfg.Namespace + `,topic=="/tasks/oom"`,
		`namespace==` + r.cfg.Namespace + `,topic=="/tasks/exit"`,
		`namespace==` + r.cfg.Namespace + `,topic=="/containers/delete"`,
	}
	for r.ctx.Err() == nil {
		envelopes, errs := r.client.Subscribe(r.ctx, filters...)
	loop:
		for {
			select {
			case <-r.ctx.Done():
				return
			case err := <-errs:
				if r.ctx.Err() == nil {
					r.logger.Warn("containerd-events-failed", "error", err)
				}
				break loop
			case env := <-envelopes:
				if env == nil || env.Event == nil {
					continue
				}
				ev, err := typeurl.UnmarshalAny(env.Event)
				if err != nil {
					continue
				}
				r.handleEvent(ev)
			}
		}
		select {
		case <-r.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (r *Runtime) handleEvent(ev any) {
	switch e := ev.(type) {
	case *apievents.TaskOOM:
		if r.owns(e.ContainerID) {
			r.events.publish(executor.RuntimeEvent{Guid: e.ContainerID, Kind: executor.RuntimeOOM,
				Reason: "out of memory: the memory limit killed a process"})
		}
	case *apievents.TaskExit:
		if e.ID == e.ContainerID && r.owns(e.ContainerID) && !r.isDestroying(e.ContainerID) {
			r.events.publish(executor.RuntimeEvent{Guid: e.ContainerID, Kind: executor.RuntimeVanished,
				Reason: "container init exited"})
		}
	case *apievents.ContainerDelete:
		if r.owns(e.ID) && !r.isDestroying(e.ID) {
			r.events.publish(executor.RuntimeEvent{Guid: e.ID, Kind: executor.RuntimeVanished,
				Reason: "container deleted outside the executor"})
		}
	}
}

// owns reports whether guid is a container this runtime made (it has state here).
func (r *Runtime) owns(guid string) bool {
	_, ok, _ := r.state.readContainerMeta(guid)
	return ok
}
