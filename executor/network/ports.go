package network

import (
	"errors"
	"fmt"
	"slices"
)

// ErrPortsExhausted is returned (wrapped) when the host-port range has too few free ports.
var ErrPortsExhausted = errors.New("host ports exhausted")

// uniquePorts returns ports without duplicates, in their first-seen order.
func uniquePorts(ports []uint32) []uint32 {
	seen := make(map[uint32]bool, len(ports))
	out := make([]uint32, 0, len(ports))
	for _, p := range ports {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// validateContainerPorts refuses ports outside [1,65535].
func validateContainerPorts(ports []uint32) error {
	for _, p := range ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("container port %d must be in [1,65535]", p)
		}
	}
	return nil
}

// portAllocator hands out host ports from [start,end], each to at most one owner. It
// prefers ports after the last one handed out, so a freed port is reused only after the
// range wraps (connections to a just-removed container do not reach its successor).
// It is not safe for concurrent use.
type portAllocator struct {
	start, end int
	next       int
	owners     map[uint32]string
}

// newPortAllocator returns an allocator over [start,end] with nothing allocated.
func newPortAllocator(start, end int) *portAllocator {
	return &portAllocator{start: start, end: end, next: start, owners: map[uint32]string{}}
}

// free is the number of ports not allocated.
func (a *portAllocator) free() int {
	return a.end - a.start + 1 - len(a.owners)
}

// allocate gives owner n distinct free ports, or nothing and an ErrPortsExhausted.
func (a *portAllocator) allocate(owner string, n int) ([]uint32, error) {
	if n > a.free() {
		return nil, fmt.Errorf("%w: %d wanted, %d of [%d,%d] free", ErrPortsExhausted, n, a.free(), a.start, a.end)
	}
	out := make([]uint32, 0, n)
	for len(out) < n {
		p := uint32(a.next)
		a.next++
		if a.next > a.end {
			a.next = a.start
		}
		if _, taken := a.owners[p]; !taken {
			a.owners[p] = owner
			out = append(out, p)
		}
	}
	return out, nil
}

// reserve records ports as owner's (when loading records). A port outside the range is
// ignored; a port another owner holds is an error.
func (a *portAllocator) reserve(owner string, ports []uint32) error {
	for _, p := range ports {
		if cur, taken := a.owners[p]; taken && cur != owner {
			return fmt.Errorf("host port %d is recorded for both %q and %q", p, cur, owner)
		}
	}
	for _, p := range ports {
		if int(p) >= a.start && int(p) <= a.end {
			a.owners[p] = owner
		}
	}
	return nil
}

// release frees every port owner holds.
func (a *portAllocator) release(owner string) {
	for p, o := range a.owners {
		if o == owner {
			delete(a.owners, p)
		}
	}
}

// ownedBy lists owner's ports in ascending order.
func (a *portAllocator) ownedBy(owner string) []uint32 {
	var out []uint32
	for p, o := range a.owners {
		if o == owner {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
