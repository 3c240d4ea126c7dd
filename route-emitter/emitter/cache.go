package emitter

import (
	"sync"

	"drover.dev/route-emitter/routingtable"
)

// unregistrationCache keeps unregisters to re-send (reference/routing.md §2.8): each is
// re-sent every interval until it was re-sent sendCount times or a register with the
// same identity (host, port, tls_port, uris, protocol) cancels it.
type unregistrationCache struct {
	mu        sync.Mutex
	sendCount int
	entries   map[routingtable.CacheKey]*cached
}

type cached struct {
	msg   routingtable.RegistryMessage
	sends int
}

func newUnregistrationCache(sendCount int) *unregistrationCache {
	return &unregistrationCache{sendCount: sendCount, entries: map[routingtable.CacheKey]*cached{}}
}

// add stores unregisters (a repeated one starts its count again).
func (c *unregistrationCache) add(msgs []routingtable.RegistryMessage) {
	if c.sendCount == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.entries[m.CacheKey()] = &cached{msg: m}
	}
}

// cancel drops the unregisters matching registers.
func (c *unregistrationCache) cancel(msgs []routingtable.RegistryMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		delete(c.entries, m.CacheKey())
	}
}

// due returns every stored unregister to send again now, counting the send, and drops
// those sent sendCount times.
func (c *unregistrationCache) due() []routingtable.RegistryMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []routingtable.RegistryMessage
	for k, e := range c.entries {
		out = append(out, e.msg)
		e.sends++
		if e.sends >= c.sendCount {
			delete(c.entries, k)
		}
	}
	return out
}

// len is the number of stored unregisters.
func (c *unregistrationCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
