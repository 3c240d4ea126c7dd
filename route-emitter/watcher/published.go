package watcher

import (
	"drover.dev/route-emitter/routingtable"
)

// publishedSet is what the routers were told last for each message identity: a register
// adds the message, an unregister removes it. After a crash it names what the dead
// process may have left registered.
type publishedSet map[routingtable.CacheKey]routingtable.RegistryMessage

// newPublishedSet starts a set from registrations (a snapshot table's).
func newPublishedSet(registrations []routingtable.RegistryMessage) publishedSet {
	p := publishedSet{}
	p.register(registrations)
	return p
}

func (p publishedSet) register(msgs []routingtable.RegistryMessage) {
	for _, m := range msgs {
		p[m.CacheKey()] = m
	}
}

func (p publishedSet) unregister(msgs []routingtable.RegistryMessage) {
	for _, m := range msgs {
		delete(p, m.CacheKey())
	}
}

// apply records messages handed to the emitter (registrations before unregistrations,
// the order the emitter publishes them in).
func (p publishedSet) apply(m routingtable.Messages) {
	p.register(m.Registrations)
	p.unregister(m.Unregistrations)
}

// list returns the set's messages, sorted.
func (p publishedSet) list() []routingtable.RegistryMessage {
	out := make([]routingtable.RegistryMessage, 0, len(p))
	for _, m := range p {
		out = append(out, m)
	}
	routingtable.SortMessages(out)
	return out
}

// stale returns, sorted, the published messages that current (the table's registrations
// now) does not register: what has to be unregistered.
func (p publishedSet) stale(current []routingtable.RegistryMessage) []routingtable.RegistryMessage {
	keep := make(map[routingtable.CacheKey]bool, len(current))
	for _, m := range current {
		keep[m.CacheKey()] = true
	}
	var out []routingtable.RegistryMessage
	for k, m := range p {
		if !keep[k] {
			out = append(out, m)
		}
	}
	routingtable.SortMessages(out)
	return out
}
