package emitter

import (
	"log/slog"
	"sync"
	"time"

	"drover.dev/route-emitter/metrics"
	"drover.dev/route-emitter/routingtable"
)

// minPacedSleep is the shortest wait of the bulk sender: it lets tokens gather so that
// sends go in small runs instead of one timer per message.
const minPacedSleep = time.Second / burstDivisor / 2

// publishFunc sends one message on a subject.
type publishFunc func(subject string, m routingtable.RegistryMessage)

// bulkBatch is registrations waiting for the paced sender.
type bulkBatch struct {
	msgs []routingtable.RegistryMessage
	// source, when set, gives msgs when the batch's turn comes (a re-broadcast).
	source Source
	// gen is the last immediate emit older than the batch's content.
	gen       uint64
	broadcast bool
}

// sender orders every publish of the emitter. Immediate messages (events, a sync's
// unregistrations, unregistration re-sends) go out at once; bulk registrations (a
// sync's, a re-broadcast) wait in a FIFO of batches for one paced goroutine, capped with
// the immediate ones at the limiter's rate in any one-second window.
//
// Ordering: a bulk register is skipped when an immediate emit after its batch was queued
// carried a message with the same identity (CacheKey). An unregister then means the
// route went away (the bulk copy is stale and must not bring it back); a register means
// the routers already have newer content. Re-sends of cached unregisters repeat old news
// and do not count. Immediate messages are never held back.
type sender struct {
	publish publishFunc
	cache   *unregistrationCache
	clock   Clock
	metrics *metrics.Metrics
	log     *slog.Logger

	// mu orders publishes: a bulk register's check and its publish are one step.
	mu      sync.Mutex
	limiter *limiter
	gen     uint64
	// touched has, while batches wait, the gen of the last immediate message per identity.
	touched         map[routingtable.CacheKey]uint64
	queue           []*bulkBatch // queue[0] is being sent
	broadcastQueued bool
	wake            chan struct{}
}

// headroomDivisor keeps the sender's own cap a twentieth below the configured rate:
// a router counts arrivals, which the network and scheduling bunch a little.
const headroomDivisor = 20

// newSender returns a sender capped a little below perSecond (see headroomDivisor).
func newSender(publish publishFunc, cache *unregistrationCache, perSecond int, clock Clock, m *metrics.Metrics, log *slog.Logger) *sender {
	capped := perSecond - perSecond/headroomDivisor
	return &sender{publish: publish, cache: cache, clock: clock, metrics: m, log: log, limiter: newLimiter(capped),
		touched: map[routingtable.CacheKey]uint64{}, wake: make(chan struct{}, 1)}
}

// emitNow publishes m at once: registrations cancel cached unregisters, unregistrations
// are published and cached for re-sending.
func (s *sender) emitNow(m routingtable.Messages) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	if len(s.queue) > 0 {
		for _, list := range [][]routingtable.RegistryMessage{m.Registrations, m.Unregistrations} {
			for _, msg := range list {
				s.touched[msg.CacheKey()] = s.gen
			}
		}
	}
	now := s.clock.Now()
	s.cache.cancel(m.Registrations)
	for _, r := range m.Registrations {
		s.publish(SubjectRegister, r)
		s.metrics.RegistrationLatency(r.EndpointUpdatedAtNs, now)
	}
	for _, u := range m.Unregistrations {
		s.publish(SubjectUnregister, u)
	}
	s.cache.add(m.Unregistrations)
	s.limiter.record(now, len(m.Registrations)+len(m.Unregistrations))
	s.metrics.Published(len(m.Registrations), len(m.Unregistrations))
	s.metrics.AddressCollisions(m.AddressCollisions)
}

// resendDue publishes the cached unregisters that are due again.
func (s *sender) resendDue() {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := s.cache.due()
	for _, u := range due {
		s.publish(SubjectUnregister, u)
	}
	s.limiter.record(s.clock.Now(), len(due))
	s.metrics.Published(0, len(due))
}

// enqueue queues b for the paced sender; a broadcast while another waits is dropped.
// It reports whether b was queued.
func (s *sender) enqueue(b *bulkBatch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.broadcast {
		if s.broadcastQueued {
			return false
		}
		s.broadcastQueued = true
	}
	b.gen = s.gen
	s.queue = append(s.queue, b)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// queued is the number of batches waiting or being sent.
func (s *sender) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// run sends queued batches in order until stop is closed.
func (s *sender) run(stop <-chan struct{}) {
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for {
		s.mu.Lock()
		var b *bulkBatch
		if len(s.queue) > 0 {
			b = s.queue[0]
		}
		s.mu.Unlock()
		if b == nil {
			select {
			case <-stop:
				return
			case <-s.wake:
				continue
			}
		}
		start := s.clock.Now()
		sent, skipped := s.send(b, stopped)
		s.done()
		s.log.Info("bulk-registrations-sent", "broadcast", b.broadcast, "sent", sent, "skipped", skipped,
			"duration", s.clock.Now().Sub(start).String())
		if stopped() {
			return
		}
	}
}

// done removes the batch at the head of the queue; with none left, no identity needs
// tracking any more.
func (s *sender) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue[0].broadcast {
		s.broadcastQueued = false
	}
	s.queue[0] = nil
	s.queue = s.queue[1:]
	if len(s.queue) == 0 {
		clear(s.touched)
	}
}

// send publishes the registrations of b (the head of the queue) at the limiter's pace,
// skipping those an immediate emit superseded; it returns early when stopped says so.
func (s *sender) send(b *bulkBatch, stopped func() bool) (sent, skipped int) {
	msgs := b.msgs
	if b.source != nil {
		msgs = b.source()
	}
	for i := 0; i < len(msgs); {
		if stopped() {
			break
		}
		s.mu.Lock()
		now := s.clock.Now()
		if wait := s.limiter.wait(now); wait > 0 {
			s.mu.Unlock()
			s.clock.Sleep(max(wait, minPacedSleep))
			continue
		}
		m := msgs[i]
		i++
		if key := m.CacheKey(); s.touched[key] > b.gen {
			skipped++
			s.mu.Unlock()
			continue
		}
		s.cache.cancel(msgs[i-1 : i])
		s.publish(SubjectRegister, m)
		s.limiter.record(now, 1)
		s.metrics.RegistrationLatency(m.EndpointUpdatedAtNs, now)
		s.mu.Unlock()
		sent++
	}
	s.metrics.Published(sent, 0)
	return sent, skipped
}
