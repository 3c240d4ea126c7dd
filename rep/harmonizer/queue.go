package harmonizer

import (
	"context"
	"sync"
)

// Queue runs operations keyed by container guid: at most one runs per key, and at most
// one waits; a newer operation replaces the waiting one (upstream's sliding queue).
// Up to workers operations of different keys run at once.
type Queue struct {
	ctx     context.Context
	slots   chan struct{}
	mu      sync.Mutex
	pending map[string]func(context.Context)
	running map[string]bool
	wg      sync.WaitGroup
}

// NewQueue makes a queue whose operations get ctx and run on at most workers goroutines.
func NewQueue(ctx context.Context, workers int) *Queue {
	if workers < 1 {
		workers = 1
	}
	return &Queue{
		ctx:     ctx,
		slots:   make(chan struct{}, workers),
		pending: map[string]func(context.Context){},
		running: map[string]bool{},
	}
}

// Push queues op under key. It does nothing once the queue's context has ended.
func (q *Queue) Push(key string, op func(context.Context)) {
	if q.ctx.Err() != nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running[key] {
		q.pending[key] = op
		return
	}
	q.running[key] = true
	q.wg.Add(1)
	go q.drain(key, op)
}

// drain runs op and then whatever is pending for key, until nothing is.
func (q *Queue) drain(key string, op func(context.Context)) {
	defer q.wg.Done()
	for op != nil {
		select {
		case q.slots <- struct{}{}:
			if q.ctx.Err() == nil {
				op(q.ctx)
			}
			<-q.slots
		case <-q.ctx.Done():
		}
		q.mu.Lock()
		op = q.pending[key]
		delete(q.pending, key)
		if op == nil {
			delete(q.running, key)
		}
		q.mu.Unlock()
	}
}

// Wait blocks until every queued operation has run or been dropped (after the
// context ends, pending operations are dropped).
func (q *Queue) Wait() { q.wg.Wait() }
