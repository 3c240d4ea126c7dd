package events

import "sync"

// admission caps the concurrent subscriptions of each identity.
type admission struct {
	limit int

	mu     sync.Mutex
	active map[string]int
}

func newAdmission(limit int) *admission {
	return &admission{limit: limit, active: map[string]int{}}
}

// admit takes a place for identity, or refuses with *TooManySubscribersError when it
// already holds limit; release gives the place back (once, however often it is called).
func (a *admission) admit(identity string) (release func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.active[identity] >= a.limit {
		return nil, &TooManySubscribersError{Identity: identity, Limit: a.limit}
	}
	a.active[identity]++
	return sync.OnceFunc(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.active[identity]--; a.active[identity] <= 0 {
			delete(a.active, identity)
		}
	}), nil
}
