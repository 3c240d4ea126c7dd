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

// pace calls send for each of n items, at most perSecond in any one-second window
// started by the first send of a batch: after each batch it waits for the window to end.
// stop, when it returns true, ends the send early.
func pace(n, perSecond int, clock Clock, send func(i int), stop func() bool) {
	if perSecond <= 0 {
		perSecond = 1
	}
	for start := 0; start < n; start += perSecond {
		if stop() {
			return
		}
		windowStart := clock.Now()
		for i := start; i < n && i < start+perSecond; i++ {
			send(i)
		}
		if start+perSecond < n {
			if wait := time.Second - clock.Now().Sub(windowStart); wait > 0 {
				clock.Sleep(wait)
			}
		}
	}
}
