package containerd

import (
	"context"
	"time"

	"drover.dev/executor"
	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"
)

// Events delivers OOM, disk-exceeded and vanish notices until ctx ends.
func (r *Runtime) Events(ctx context.Context) <-chan executor.RuntimeEvent {
	// The subscription also ends when the runtime closes.
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(r.ctx, cancel)
	context.AfterFunc(ctx, func() { stop() })
	return r.events.Subscribe(ctx, 64)
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
			r.events.Publish(executor.RuntimeEvent{Guid: e.ContainerID, Kind: executor.RuntimeOOM,
				Reason: "out of memory: the memory limit killed a process in the container"})
		}
	case *apievents.TaskExit:
		if e.ID == e.ContainerID && r.owns(e.ContainerID) && !r.isDestroying(e.ContainerID) {
			r.events.Publish(executor.RuntimeEvent{Guid: e.ContainerID, Kind: executor.RuntimeVanished,
				Reason: "container init exited"})
		}
	case *apievents.ContainerDelete:
		if r.owns(e.ID) && !r.isDestroying(e.ID) {
			r.events.Publish(executor.RuntimeEvent{Guid: e.ID, Kind: executor.RuntimeVanished,
				Reason: "container deleted outside the executor"})
		}
	}
}

// owns reports whether guid is a container this runtime made (it has state here).
func (r *Runtime) owns(guid string) bool {
	_, ok, _ := r.state.readContainerMeta(guid)
	return ok
}
