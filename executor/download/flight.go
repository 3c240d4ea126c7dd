package download

import (
	"context"
	"fmt"
)

// flightKey identifies downloads that can be shared: same cache entry, same checksum.
type flightKey struct {
	cacheKey, alg, value string
}

// flight is one download of a cache entry with the callers waiting for it. It runs on
// its own context, cancelled when the last waiter gives up.
type flight struct {
	cancel  context.CancelFunc
	waiters map[*waiter]struct{}
}

// waiter is one caller waiting for a flight.
type waiter struct {
	ch chan result
}

// fetchShared joins (or starts) the flight for req's cache entry and waits for its result.
func (c *Cache) fetchShared(ctx context.Context, req Request, sum checksum) result {
	fk := flightKey{cacheKey: req.CacheKey, alg: sum.alg, value: sum.value}
	w := &waiter{ch: make(chan result, 1)}
	c.mu.Lock()
	fl := c.flights[fk]
	if fl == nil {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		fl = &flight{cancel: cancel, waiters: map[*waiter]struct{}{}}
		c.flights[fk] = fl
		go c.runFlight(fctx, fk, fl, req, sum)
	}
	fl.waiters[w] = struct{}{}
	c.mu.Unlock()

	select {
	case r := <-w.ch:
		return r
	case <-ctx.Done():
	}
	c.mu.Lock()
	_, waiting := fl.waiters[w]
	if waiting {
		delete(fl.waiters, w)
		if len(fl.waiters) == 0 {
			fl.cancel()
			if c.flights[fk] == fl {
				delete(c.flights, fk)
			}
		}
	}
	c.mu.Unlock()
	if !waiting {
		if r := <-w.ch; r.err == nil {
			_ = r.release()
		}
	}
	return result{err: fmt.Errorf("downloading %s: %w", displayURL(req.URL), ctx.Err())}
}

// runFlight does the download and hands every waiter its own reader of the result.
func (c *Cache) runFlight(ctx context.Context, fk flightKey, fl *flight, req Request, sum checksum) {
	defer fl.cancel()
	f, size, err := c.fetchKeyed(ctx, req, sum)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flights[fk] == fl {
		delete(c.flights, fk)
	}
	waiters := fl.waiters
	fl.waiters = map[*waiter]struct{}{}
	if err != nil {
		for w := range waiters {
			w.ch <- result{err: err}
		}
		return
	}
	readers := share(f, size, len(waiters))
	i := 0
	for w := range waiters {
		w.ch <- readers[i]
		i++
	}
}
