// Package keyedmutex serialises work per key (a container guid) while letting different
// keys proceed in parallel.
package keyedmutex

import "sync"

// Mutex serialises work per key (a guid) while letting different keys proceed in
// parallel. The zero value is ready to use.
type Mutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu   sync.Mutex
	refs int
}

// Lock blocks until key is free, takes it, and returns the function that frees it.
func (k *Mutex) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()

	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
