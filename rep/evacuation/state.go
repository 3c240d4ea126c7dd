// Package evacuation is the cell's drain (cell.md §2.8): the shared evacuation state the
// rep's parts consult, the evacuator that waits for the containers to go and then
// cleans up, and the signal filter that turns SIGTERM into an evacuation when the rep
// is configured to evacuate on SIGTERM.
package evacuation

import (
	"sync"
	"sync/atomic"
)

// State says whether the cell evacuates. It starts false and flips once, for good.
// It is safe for concurrent use.
type State struct {
	once       sync.Once
	started    chan struct{}
	evacuating atomic.Bool
	metrics    *Metrics
}

// NewState makes a state that is not evacuating; metrics may be nil.
func NewState(metrics *Metrics) *State {
	return &State{started: make(chan struct{}), metrics: metrics}
}

// Start begins the evacuation; already reports whether it had begun before.
func (s *State) Start() (already bool) {
	already = true
	s.once.Do(func() {
		already = false
		s.evacuating.Store(true)
		s.metrics.setEvacuating()
		close(s.started)
	})
	return already
}

// Evacuating reports whether the evacuation has begun.
func (s *State) Evacuating() bool { return s.evacuating.Load() }

// Started is closed when the evacuation begins.
func (s *State) Started() <-chan struct{} { return s.started }
