package auction

import (
	"net/url"
	"slices"
	"strings"
)

// fixedSetSchemes are the rootfs schemes whose opaque part must name a cell's stack.
var fixedSetSchemes = map[string]bool{"preloaded": true, "preloaded+layer": true}

// rootFSMatcher is a cell's rootfs providers, indexed for matching.
type rootFSMatcher map[string]map[string]bool // scheme → fixed set (nil: arbitrary)

func newRootFSMatcher(providers []RootFSProvider) rootFSMatcher {
	m := rootFSMatcher{}
	for _, p := range providers {
		if len(p.Properties) == 0 && !fixedSetSchemes[p.Name] {
			m[p.Name] = nil
			continue
		}
		set := m[p.Name]
		if set == nil {
			set = map[string]bool{}
			m[p.Name] = set
		}
		for _, name := range p.Properties {
			set[name] = true
		}
	}
	// preloaded+layer runs on the preloaded stacks when the cell does not list it apart.
	if set, ok := m["preloaded"]; ok {
		if _, layered := m["preloaded+layer"]; !layered {
			m["preloaded+layer"] = set
		}
	}
	return m
}

// match reports whether the cell runs the parsed rootfs URL: an arbitrary provider takes
// any URL of its scheme, a fixed set only its named stacks.
func (m rootFSMatcher) match(rootfs *url.URL) bool {
	if rootfs == nil {
		return false
	}
	set, ok := m[rootfs.Scheme]
	if !ok {
		return false
	}
	if set == nil {
		return true
	}
	return set[rootfs.Opaque]
}

// parseRootFS parses a rootfs URL; an unparsable one matches no cell.
func parseRootFS(rootfs string) *url.URL {
	u, err := url.Parse(rootfs)
	if err != nil || u.Scheme == "" {
		return nil
	}
	return u
}

// set is a set of strings.
type set map[string]bool

func newSet(lists ...[]string) set {
	s := set{}
	for _, list := range lists {
		for _, v := range list {
			s[v] = true
		}
	}
	return s
}

// containsAll reports whether every value is in s.
func (s set) containsAll(values []string) bool {
	for _, v := range values {
		if !s[v] {
			return false
		}
	}
	return true
}

// matchTags is upstream's rule: the cell's required tags must all be desired, and every
// desired tag must be among the cell's required plus optional tags.
func (c *cell) matchTags(desired set, desiredList []string) bool {
	for tag := range c.requiredTags {
		if !desired[tag] {
			return false
		}
	}
	return c.allTags.containsAll(desiredList)
}

// filterStage is how far a cell got through the filters, in upstream's order.
type filterStage int

const (
	failedRootFS  filterStage = iota // the rootfs did not match
	failedDrivers                    // the rootfs matched, the volume drivers did not
	failedTags                       // rootfs and drivers matched, the placement tags did not
	passed
)

// stage runs the filters for one cell.
func (c *cell) stage(rootfs *url.URL, constraint *Constraint, desiredTags set) filterStage {
	if !c.rootFS.match(rootfs) {
		return failedRootFS
	}
	if !c.drivers.containsAll(constraint.VolumeDrivers) {
		return failedDrivers
	}
	if !c.matchTags(desiredTags, constraint.PlacementTags) {
		return failedTags
	}
	return passed
}

// candidates are the cells, grouped by zone, that passed every filter for a constraint;
// err is the placement error when none did. cordoned are the cordoned cells that would
// have passed.
type candidates struct {
	zones    []*zoneCells
	cordoned []*cell
	err      string
}

// zoneCells are one zone's compatible cells.
type zoneCells struct {
	zone  *zone
	cells []*cell
}

// constraintKey identifies a constraint for the per-Place filter cache.
func constraintKey(c *Constraint) string {
	var b strings.Builder
	b.WriteString(c.RootFS)
	b.WriteByte(0)
	tags := slices.Clone(c.PlacementTags)
	slices.Sort(tags)
	b.WriteString(strings.Join(tags, "\x01"))
	b.WriteByte(0)
	drivers := slices.Clone(c.VolumeDrivers)
	slices.Sort(drivers)
	b.WriteString(strings.Join(drivers, "\x01"))
	return b.String()
}

// filter finds the compatible cells of every zone. With none, the error names the
// compatible cordoned cells if there are any, else the furthest filter any cell passed
// (rootfs → volume drivers → placement tags); upstream picks between zones in random map
// order, drover takes the furthest deterministically.
func (s *scheduler) filter(c *Constraint) *candidates {
	key := constraintKey(c)
	if cached, ok := s.filterCache[key]; ok {
		return cached
	}
	rootfs := parseRootFS(c.RootFS)
	desired := newSet(c.PlacementTags)
	result := &candidates{}
	furthest := failedRootFS
	for _, z := range s.zones {
		var cells []*cell
		for _, cl := range z.cells {
			st := cl.stage(rootfs, c, desired)
			if st == passed {
				cells = append(cells, cl)
				continue
			}
			furthest = max(furthest, st)
		}
		if len(cells) > 0 {
			result.zones = append(result.zones, &zoneCells{zone: z, cells: cells})
		}
	}
	for _, cl := range s.cordoned {
		st := cl.stage(rootfs, c, desired)
		if st == passed {
			result.cordoned = append(result.cordoned, cl)
			continue
		}
		furthest = max(furthest, st)
	}
	if len(result.zones) == 0 {
		if len(result.cordoned) > 0 {
			result.err = allCordoned(result.cordoned)
		} else {
			result.err = mismatch(furthest, c)
		}
	}
	s.filterCache[key] = result
	return result
}

// mismatch is the placement error of work that no cell passed the filters for, named
// after the furthest filter any cell passed.
func mismatch(furthest filterStage, c *Constraint) string {
	switch furthest {
	case failedRootFS:
		return ErrRootFSMismatch
	case failedDrivers:
		return ErrVolumeDriverMismatch
	default:
		return PlacementTagMismatch(c.PlacementTags)
	}
}
