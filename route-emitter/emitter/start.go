package emitter

import "time"

// The range of the intervals a router announces (router.start, a greet reply) that the
// emitter follows. Values are whole seconds, so MinRouterInterval is the smallest
// positive one; anything above MaxRouterInterval, up to values whose duration would
// overflow, is taken as MaxRouterInterval. Zero or a negative value gives no interval.
const (
	MinRouterInterval = time.Second
	MaxRouterInterval = time.Hour
)

// routerIntervals are the intervals of a router.start or greet reply, in range.
type routerIntervals struct {
	// Register is the re-registration period the router asks for; 0 when none is given.
	Register time.Duration
	// Prune is how long the router keeps a route without a register; 0 when none is given.
	Prune time.Duration
	// Clamped is true when a given value was out of range (brought into it, or, when
	// negative, ignored).
	Clamped bool
}

// intervalsOf reads the intervals of m, each clamped to [MinRouterInterval,
// MaxRouterInterval].
func intervalsOf(m StartMessage) routerIntervals {
	var iv routerIntervals
	var clamped bool
	iv.Register, clamped = clampSeconds(m.MinimumRegisterIntervalInSeconds)
	iv.Clamped = clamped
	iv.Prune, clamped = clampSeconds(m.PruneThresholdInSeconds)
	iv.Clamped = iv.Clamped || clamped
	return iv
}

// clampSeconds is seconds as a duration in [MinRouterInterval, MaxRouterInterval], or 0
// for none (zero or negative); clamped reports a value that was out of range. The
// comparison happens in seconds, before the multiplication that would overflow.
func clampSeconds(seconds int) (d time.Duration, clamped bool) {
	const minS, maxS = int(MinRouterInterval / time.Second), int(MaxRouterInterval / time.Second)
	switch {
	case seconds == 0:
		return 0, false
	case seconds < 0:
		return 0, true
	case seconds < minS:
		return MinRouterInterval, true
	case seconds > maxS:
		return MaxRouterInterval, true
	}
	return time.Duration(seconds) * time.Second, false
}
