package callback

import "sync"

// Registry holds the stagings waiting for their task's completion, by task guid.
type Registry struct {
	mu      sync.Mutex
	waiters map[string]chan Completion
}

// NewRegistry makes an empty registry.
func NewRegistry() *Registry { return &Registry{waiters: map[string]chan Completion{}} }

// Wait registers a waiter for taskGUID: the channel receives its completion once.
// Call done when no longer waiting.
func (r *Registry) Wait(taskGUID string) (completed <-chan Completion, done func()) {
	ch := make(chan Completion, 1)
	r.mu.Lock()
	r.waiters[taskGUID] = ch
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		if r.waiters[taskGUID] == ch {
			delete(r.waiters, taskGUID)
		}
		r.mu.Unlock()
	}
}

// Deliver hands c to its waiter and reports whether there was one. A second
// completion of the same task is dropped.
func (r *Registry) Deliver(c Completion) bool {
	r.mu.Lock()
	ch, ok := r.waiters[c.TaskGUID]
	r.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- c:
	default:
	}
	return true
}
