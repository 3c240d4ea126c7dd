package steps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// serialStep runs children in order and stops at the first error; it is ready when the
// last child is ready.
type serialStep struct{ children []Step }

func (s *serialStep) Run(ctx context.Context, ready func()) error {
	for i, c := range s.children {
		if ctx.Err() != nil {
			return ErrCancelled
		}
		var r func()
		if i == len(s.children)-1 {
			r = ready
		}
		if err := c.Run(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// readyAll returns per-child ready funcs that call ready once all n have been called.
func readyAll(n int, ready func()) []func() {
	var mu sync.Mutex
	left := n
	out := make([]func(), n)
	for i := range out {
		var once sync.Once
		out[i] = func() {
			once.Do(func() {
				mu.Lock()
				left--
				last := left == 0
				mu.Unlock()
				if last {
					signalReady(ready)
				}
			})
		}
	}
	return out
}

// parallelStep runs children at once, waits for all and aggregates their errors.
type parallelStep struct{ children []Step }

func (s *parallelStep) Run(ctx context.Context, ready func()) error {
	readies := readyAll(len(s.children), ready)
	errs := make([]error, len(s.children))
	var wg sync.WaitGroup
	for i, c := range s.children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Run(ctx, readies[i])
		}()
	}
	wg.Wait()
	return aggregate(errs)
}

// codependentStep runs children at once; the first exit of any kind (a clean one
// becomes ErrCodependentExited) cancels the others and is the step's error.
type codependentStep struct{ children []Step }

func (s *codependentStep) Run(ctx context.Context, ready func()) error {
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	readies := readyAll(len(s.children), ready)
	results := make(chan error, len(s.children))
	for i, c := range s.children {
		go func() {
			err := c.Run(inner, readies[i])
			if err == nil {
				err = ErrCodependentExited
			}
			results <- err
		}()
	}
	first := <-results
	cancel()
	for range len(s.children) - 1 {
		<-results
	}
	if ctx.Err() != nil {
		return ErrCancelled
	}
	return first
}

// timeoutStep interrupts its child after a duration and fails with
// "exceeded <d> timeout" (plus "; <child message>" when the child's error is emittable).
type timeoutStep struct {
	child   Step
	timeout time.Duration
}

func (s *timeoutStep) Run(ctx context.Context, ready func()) error {
	inner, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := s.child.Run(inner, ready)
	if ctx.Err() == nil && errors.Is(inner.Err(), context.DeadlineExceeded) {
		msg := fmt.Sprintf("exceeded %s timeout", s.timeout)
		if child, ok := EmittableMessage(err); ok {
			msg += "; " + child
		}
		return emittable(err, "%s", msg)
	}
	return err
}

// tryStep runs its child and swallows its error (but not a cancellation).
type tryStep struct{ child Step }

func (s *tryStep) Run(ctx context.Context, ready func()) error {
	_ = s.child.Run(ctx, ready)
	if ctx.Err() != nil {
		return ErrCancelled
	}
	return nil
}

// emitProgressStep writes progress messages around its child.
type emitProgressStep struct {
	child  Step
	deps   *Deps
	model  *modelsv1.EmitProgressAction
	source string
}

func (s *emitProgressStep) Run(ctx context.Context, ready func()) error {
	if msg := s.model.GetStartMessage(); msg != "" {
		s.deps.println(s.source, "stdout", msg)
	}
	err := s.child.Run(ctx, ready)
	if err != nil {
		if prefix := s.model.GetFailureMessagePrefix(); prefix != "" {
			if msg, ok := EmittableMessage(err); ok {
				prefix += ": " + msg
			}
			s.deps.println(s.source, "stderr", prefix)
		}
		return err
	}
	if msg := s.model.GetSuccessMessage(); msg != "" {
		s.deps.println(s.source, "stdout", msg)
	}
	return nil
}
