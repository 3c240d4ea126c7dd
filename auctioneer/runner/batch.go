// Package runner runs the auctioneer's auctions: it batches requests, fetches the cells
// and their states, places the work with package auction, sends each rep its work and
// reports what could not be placed to the BBS (reference/cell.md §1.3–1.8).
package runner

import (
	"sync"

	"drover.dev/auctioneer/auction"
)

// Batch gathers the work that arrives between auctions. There is no timer: adding work
// signals HasWork (capacity 1), and the runner drains everything at once.
type Batch struct {
	mu    sync.Mutex
	lrps  []auction.LRPAuction
	tasks []auction.TaskAuction
	// hasWork is signalled (without blocking) whenever work is added.
	hasWork chan struct{}
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	return &Batch{hasWork: make(chan struct{}, 1)}
}

// HasWork receives a value after work was added.
func (b *Batch) HasWork() <-chan struct{} { return b.hasWork }

// AddLRPs queues LRP instances.
func (b *Batch) AddLRPs(lrps []auction.LRPAuction) {
	if len(lrps) == 0 {
		return
	}
	b.mu.Lock()
	b.lrps = append(b.lrps, lrps...)
	b.mu.Unlock()
	b.signal()
}

// AddTasks queues tasks.
func (b *Batch) AddTasks(tasks []auction.TaskAuction) {
	if len(tasks) == 0 {
		return
	}
	b.mu.Lock()
	b.tasks = append(b.tasks, tasks...)
	b.mu.Unlock()
	b.signal()
}

func (b *Batch) signal() {
	select {
	case b.hasWork <- struct{}{}:
	default:
	}
}

// DedupeAndDrain takes all queued work out of the batch, keeping the first of each LRP
// instance (process_guid.index) and of each task guid.
func (b *Batch) DedupeAndDrain() ([]auction.LRPAuction, []auction.TaskAuction) {
	b.mu.Lock()
	lrps, tasks := b.lrps, b.tasks
	b.lrps, b.tasks = nil, nil
	b.mu.Unlock()

	seenLRPs := make(map[auction.LRPKey]bool, len(lrps))
	dedupedLRPs := lrps[:0]
	for _, lrp := range lrps {
		if !seenLRPs[lrp.Key()] {
			seenLRPs[lrp.Key()] = true
			dedupedLRPs = append(dedupedLRPs, lrp)
		}
	}
	seenTasks := make(map[string]bool, len(tasks))
	dedupedTasks := tasks[:0]
	for _, task := range tasks {
		if !seenTasks[task.TaskGuid] {
			seenTasks[task.TaskGuid] = true
			dedupedTasks = append(dedupedTasks, task)
		}
	}
	return dedupedLRPs, dedupedTasks
}
