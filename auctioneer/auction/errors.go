package auction

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Placement error strings, exactly as upstream (reference/cell.md §1.8).
const (
	ErrRootFSMismatch        = "found no compatible cell for required rootfs"
	ErrVolumeDriverMismatch  = "found no compatible cell with required volume drivers"
	ErrCellCommunication     = "unable to communicate to compatible cells"
	ErrInFlightLimit         = "waiting to start instance: reached in-flight start limit"
	insufficientResources    = "insufficient resources"
	noPlacementTagsMismatch  = "found no compatible cell with no placement tags"
	placementTagMismatchBase = "found no compatible cell with placement tag"
	// ErrAllCordoned starts the error of work whose every compatible cell is cordoned:
	// "all compatible cells are cordoned: cell-1 (reason), cell-2".
	ErrAllCordoned = "all compatible cells are cordoned"
	// MaxNamedCordonedCells is how many cordoned cells a placement error names; the
	// others are counted.
	MaxNamedCordonedCells = 5
)

// allCordoned is the placement error of work that only cordoned cells could take.
func allCordoned(cells []*cell) string {
	return ErrAllCordoned + ": " + cordonList(cells)
}

// withCordoned adds the compatible cordoned cells, if any, to a resource shortfall:
// "insufficient resources: ...; compatible cells cordoned: cell-1 (reason)".
func withCordoned(msg string, cordoned []*cell) string {
	if len(cordoned) == 0 {
		return msg
	}
	return msg + "; compatible cells cordoned: " + cordonList(cordoned)
}

// cordonList names up to MaxNamedCordonedCells cells, sorted by id, each with its
// cordon reason in parentheses when it has one, and counts the rest.
func cordonList(cells []*cell) string {
	ids := slices.Clone(cells)
	slices.SortFunc(ids, func(a, b *cell) int { return strings.Compare(a.id, b.id) })
	var parts []string
	for i, c := range ids {
		if i == MaxNamedCordonedCells {
			parts = append(parts, fmt.Sprintf("and %d more", len(ids)-i))
			break
		}
		if c.cordonReason == "" {
			parts = append(parts, c.id)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", c.id, c.cordonReason))
	}
	return strings.Join(parts, ", ")
}

// PlacementTagMismatch is the error for work whose tags no cell matches: one tag
// `... placement tag "x"`, several `... placement tags "a", "b" and "c"`.
func PlacementTagMismatch(tags []string) string {
	switch len(tags) {
	case 0:
		return noPlacementTagsMismatch
	case 1:
		return fmt.Sprintf("%s %q", placementTagMismatchBase, tags[0])
	}
	quoted := make([]string, len(tags))
	for i, tag := range tags {
		quoted[i] = strconv.Quote(tag)
	}
	return fmt.Sprintf("%ss %s and %s", placementTagMismatchBase,
		strings.Join(quoted[:len(quoted)-1], ", "), quoted[len(quoted)-1])
}

// Shortfall names a resource a cell lacked.
type shortfall uint8

// The shortfalls, in upstream's sorted order of their names.
const (
	shortContainers shortfall = 1 << iota
	shortDisk
	shortMemory
	allShortfalls = shortContainers | shortDisk | shortMemory
)

// shortfallNames lists the shortfalls in the order upstream prints them (sorted).
var shortfallNames = []struct {
	bit  shortfall
	name string
}{{shortContainers, "containers"}, {shortDisk, "disk"}, {shortMemory, "memory"}}

// insufficient tracks, over the cells scored for one piece of work, the shortfalls every
// cell shared and the largest free amount of each resource.
type insufficient struct {
	common  shortfall
	largest Resources
}

func newInsufficient() insufficient { return insufficient{common: allShortfalls} }

// add records one cell that did not fit.
func (in *insufficient) add(problems shortfall, available Resources) {
	in.common &= problems
	in.largest.MemoryMB = max(in.largest.MemoryMB, available.MemoryMB)
	in.largest.DiskMB = max(in.largest.DiskMB, available.DiskMB)
	in.largest.Containers = max(in.largest.Containers, available.Containers)
}

// message is upstream's "insufficient resources: <sorted shortfalls>" followed by what was
// needed and the largest free amount of each, e.g.
// "insufficient resources: memory (needs 8192 MB, largest free 4000 MB)".
func (in insufficient) message(need Resource) string {
	var names, details []string
	for _, s := range shortfallNames {
		if in.common&s.bit == 0 {
			continue
		}
		names = append(names, s.name)
		switch s.bit {
		case shortContainers:
			details = append(details, fmt.Sprintf("needs 1 container, largest free %d", in.largest.Containers))
		case shortDisk:
			details = append(details, fmt.Sprintf("needs %d MB, largest free %d MB", need.DiskMB, in.largest.DiskMB))
		case shortMemory:
			details = append(details, fmt.Sprintf("needs %d MB, largest free %d MB", need.MemoryMB, in.largest.MemoryMB))
		}
	}
	if len(names) == 0 {
		return insufficientResources
	}
	if len(names) > 1 {
		for i := range details {
			details[i] = names[i] + ": " + details[i]
		}
	}
	return fmt.Sprintf("%s: %s (%s)", insufficientResources, strings.Join(names, ", "), strings.Join(details, "; "))
}
