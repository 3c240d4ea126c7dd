package emitter

import "time"

// Clock is the time a paced send reads and waits on (fakes in tests).
type Clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

// burstDivisor sets a limiter's burst: 1/burstDivisor of a second's messages.
const burstDivisor = 50

// limiter caps messages at perSecond in any one-second window, counting every message
// recorded (paced or not). A token bucket (refilled at perSecond, holding at most a
// fiftieth of a second's messages) spreads paced sends evenly; the send times of the
// last perSecond messages make the cap exact. Not safe for concurrent use.
type limiter struct {
	perSecond int
	burst     float64
	tokens    float64
	last      time.Time
	// times is a ring of the last perSecond send times (UnixNano, 0: none); next is its
	// oldest slot, the one the next send overwrites.
	times []int64
	next  int
}

// newLimiter returns a limiter of perSecond messages (at least 1), full at first.
func newLimiter(perSecond int) *limiter {
	perSecond = max(perSecond, 1)
	burst := max(1, float64(perSecond/burstDivisor))
	return &limiter{perSecond: perSecond, burst: burst, tokens: burst, times: make([]int64, perSecond)}
}

// refill adds the tokens earned since the last call.
func (l *limiter) refill(now time.Time) {
	if !l.last.IsZero() && now.After(l.last) {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*float64(l.perSecond))
	}
	if now.After(l.last) {
		l.last = now
	}
}

// wait is how long a paced send has to wait at now before it may go (0: now).
func (l *limiter) wait(now time.Time) time.Duration {
	l.refill(now)
	var d time.Duration
	if l.tokens < 1 {
		d = time.Duration((1 - l.tokens) / float64(l.perSecond) * float64(time.Second))
	}
	if oldest := l.times[l.next]; oldest != 0 {
		d = max(d, time.Duration(oldest+int64(time.Second)-now.UnixNano()))
	}
	return max(d, 0)
}

// record counts n messages sent at now (the bucket may go below zero: messages sent at
// once, without pacing, delay the paced ones).
func (l *limiter) record(now time.Time, n int) {
	l.refill(now)
	l.tokens -= float64(n)
	if n > l.perSecond {
		n = l.perSecond // older entries would be overwritten anyway
	}
	for range n {
		l.times[l.next] = now.UnixNano()
		l.next = (l.next + 1) % len(l.times)
	}
}
