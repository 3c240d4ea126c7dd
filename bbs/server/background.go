package server

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// The reason label values of drover_bbs_side_effects_dropped_total.
const (
	dropRequestEnded = "request_ended"
	dropShuttingDown = "shutting_down"
)

// noWait is the context of a caller without a request: a side effect it starts runs
// only if its pool has a free slot at once.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func newDroppedCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "drover", Subsystem: "bbs",
		Name: "side_effects_dropped_total",
		Help: "Side effects (auction requests, rep calls, task callbacks) not started, by pool (background, callbacks) and reason: the request ended while every slot of the pool was taken (request_ended), or the server was shutting down (shutting_down). Convergence repairs what they would have done.",
	}, []string{"pool", "reason"})
	for _, pool := range []string{"background", "callbacks"} {
		c.WithLabelValues(pool, dropRequestEnded)
		c.WithLabelValues(pool, dropShuttingDown)
	}
	if reg == nil {
		return c
	}
	var already prometheus.AlreadyRegisteredError
	if err := reg.Register(c); errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(*prometheus.CounterVec); ok {
			return existing
		}
	}
	return c
}

// goBackgroundFor runs f, a side effect of the request whose context is ctx, in its own
// goroutine once sem (a pool: backgroundSem or callbackSem) has a free slot. f gets the
// server's context, which outlives the request and ends on Shutdown. The handler waits
// for a slot only while its request lives: if ctx ends first, or the server is shutting
// down, f is dropped, logged and counted. Side effects are best effort either way, and
// convergence repairs what a dropped one would have done (Diego likewise fires them
// and forgets them).
func (s *Server) goBackgroundFor(ctx context.Context, sem chan struct{}, f func(ctx context.Context)) {
	select {
	case sem <- struct{}{}:
	default:
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			s.drop(sem, dropRequestEnded)
			return
		case <-s.stopping:
			s.drop(sem, dropShuttingDown)
			return
		}
	}
	s.mu.Lock()
	select {
	case <-s.stopping:
		s.mu.Unlock()
		<-sem
		s.drop(sem, dropShuttingDown)
		return
	default:
	}
	s.background.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.background.Done()
		defer func() { <-sem }()
		defer func() {
			if p := recover(); p != nil {
				s.logger.Error("side-effect-panicked", "panic", p)
			}
		}()
		f(s.ctx)
	}()
}

// goBackground is goBackgroundFor for a caller that has no request context at hand: f
// runs only if sem has a free slot at once, and is dropped otherwise.
func (s *Server) goBackground(sem chan struct{}, f func(ctx context.Context)) {
	s.goBackgroundFor(noWait, sem, f)
}

// drop logs and counts a side effect that was not started.
func (s *Server) drop(sem chan struct{}, reason string) {
	pool := "background"
	if sem == s.callbackSem {
		pool = "callbacks"
	}
	s.dropped.WithLabelValues(pool, reason).Inc()
	s.logger.Warn("side-effect-dropped", "pool", pool, "reason", reason)
}

// Wait blocks until every side effect started so far has finished (for tests).
func (s *Server) Wait() {
	s.background.Wait()
}

// Shutdown ends the side effects: none start any more, those in flight have until ctx
// ends to finish, then their context is cancelled and Shutdown waits for them to
// return. It returns ctx's error when it had to cancel them. Call it once the gRPC
// servers have stopped, so that no handler starts side effects any more.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	select {
	case <-s.stopping:
	default:
		close(s.stopping)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.background.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel()
		<-done
		return ctx.Err()
	}
}
