package auction

import (
	"cmp"
	"slices"
)

// LocalityOffset is added to a cell's score per instance of the same LRP (or, for tasks,
// per task) it already holds: it outweighs any resource score, so spreading wins.
const LocalityOffset = 1000

// cell is the scheduler's working copy of one cell; placements update it.
type cell struct {
	id        string
	zone      *zone
	index     int
	available Resources
	total     Resources
	starting  int
	// instances counts the LRP instances per process guid on the cell.
	instances    map[string]int
	tasks        int
	rootFS       rootFSMatcher
	requiredTags set
	allTags      set
	drivers      set
	work         *CellWork
	// cordonReason is the operator's reason on a cordoned cell.
	cordonReason string
}

// newCordonedCell is the filter-only copy of a cordoned cell: it is never scored or
// placed on, only matched so that placement errors can name it.
func newCordonedCell(st *CellState) *cell {
	return &cell{
		id:           st.CellID,
		rootFS:       newRootFSMatcher(st.RootFSProviders),
		requiredTags: newSet(st.PlacementTags),
		allTags:      newSet(st.PlacementTags, st.OptionalPlacementTags),
		drivers:      newSet(st.VolumeDrivers),
		cordonReason: st.CordonReason,
	}
}

// zone is the cells of one zone and their LRP instances per process guid.
type zone struct {
	name      string
	cells     []*cell
	instances map[string]int
}

// scheduler is the state of one Place call.
type scheduler struct {
	opts  Options
	zones []*zone
	cells []*cell
	// cordoned are the cordoned cells: never placed on, only named in placement errors.
	cordoned    []*cell
	filterCache map[string]*candidates
	inFlight    int
}

// Place runs one auction: every index-0 LRP first, then every task, then the other
// indices, each placed greedily on the lowest-scoring compatible cell that fits (the
// placements made so far count). What cannot be placed fails with upstream's
// placement error. Place does no I/O and does not modify its arguments.
func Place(cells []CellState, lrps []LRPAuction, tasks []TaskAuction, opts Options) Result {
	var result Result
	if len(cells) == 0 {
		for _, lrp := range lrps {
			result.FailedLRPs = append(result.FailedLRPs, FailedLRP{LRPAuction: lrp, PlacementError: ErrCellCommunication})
		}
		for _, task := range tasks {
			result.FailedTasks = append(result.FailedTasks, FailedTask{TaskAuction: task, PlacementError: ErrCellCommunication})
		}
		return result
	}
	s := newScheduler(cells, opts)

	sortedLRPs := slices.Clone(lrps)
	slices.SortStableFunc(sortedLRPs, func(a, b LRPAuction) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(b.Resource.MemoryMB, a.Resource.MemoryMB))
	})
	sortedTasks := slices.Clone(tasks)
	slices.SortStableFunc(sortedTasks, func(a, b TaskAuction) int {
		return cmp.Compare(b.Resource.MemoryMB, a.Resource.MemoryMB)
	})
	firstIndices := 0
	for firstIndices < len(sortedLRPs) && sortedLRPs[firstIndices].Index == 0 {
		firstIndices++
	}

	placeLRPs := func(batch []LRPAuction) {
		for _, lrp := range batch {
			if err := s.placeLRP(lrp); err != "" {
				result.FailedLRPs = append(result.FailedLRPs, FailedLRP{LRPAuction: lrp, PlacementError: err})
			}
		}
	}
	placeLRPs(sortedLRPs[:firstIndices])
	for _, task := range sortedTasks {
		if err := s.placeTask(task); err != "" {
			result.FailedTasks = append(result.FailedTasks, FailedTask{TaskAuction: task, PlacementError: err})
		}
	}
	placeLRPs(sortedLRPs[firstIndices:])

	for _, c := range s.cells {
		if c.work != nil {
			result.Work = append(result.Work, *c.work)
		}
	}
	return result
}

// newScheduler builds the working copies of the cells, grouped into zones sorted by
// name; with bin-pack-first-fit on, each zone's cells are ordered by index and given
// normalised indices 0..n-1.
func newScheduler(states []CellState, opts Options) *scheduler {
	s := &scheduler{opts: opts, filterCache: map[string]*candidates{}}
	byName := map[string]*zone{}
	for i := range states {
		st := &states[i]
		if st.Cordoned {
			s.cordoned = append(s.cordoned, newCordonedCell(st))
			continue
		}
		z := byName[st.Zone]
		if z == nil {
			z = &zone{name: st.Zone, instances: map[string]int{}}
			byName[st.Zone] = z
			s.zones = append(s.zones, z)
		}
		c := &cell{
			id:           st.CellID,
			zone:         z,
			index:        st.Index,
			available:    st.Available,
			total:        st.Total,
			starting:     st.StartingContainerCount,
			instances:    make(map[string]int, len(st.LRPs)),
			tasks:        len(st.Tasks),
			rootFS:       newRootFSMatcher(st.RootFSProviders),
			requiredTags: newSet(st.PlacementTags),
			allTags:      newSet(st.PlacementTags, st.OptionalPlacementTags),
			drivers:      newSet(st.VolumeDrivers),
		}
		for _, lrp := range st.LRPs {
			c.instances[lrp.ProcessGuid]++
			z.instances[lrp.ProcessGuid]++
		}
		s.inFlight += st.StartingContainerCount
		z.cells = append(z.cells, c)
		s.cells = append(s.cells, c)
	}
	slices.SortFunc(s.zones, func(a, b *zone) int { return cmp.Compare(a.name, b.name) })
	if opts.BinPackFirstFitWeight > 0 {
		for _, z := range s.zones {
			slices.SortStableFunc(z.cells, func(a, b *cell) int { return cmp.Compare(a.index, b.index) })
			for i, c := range z.cells {
				c.index = i
			}
		}
	}
	return s
}

// atInFlightLimit reports whether the in-flight start cap is reached.
func (s *scheduler) atInFlightLimit() bool {
	return s.opts.StartingContainerCountMaximum > 0 && s.inFlight >= s.opts.StartingContainerCountMaximum
}

// placeLRP places one instance and returns "" or its placement error. Zones are walked
// by ascending instance count of the LRP; a zone whose count ties with the next lets the
// next compete, otherwise the first zone with a fitting cell wins.
func (s *scheduler) placeLRP(lrp LRPAuction) string {
	if s.atInFlightLimit() {
		return ErrInFlightLimit
	}
	found := s.filter(&lrp.Constraint)
	if found.err != "" {
		return found.err
	}
	zones := found.zones
	if len(zones) > 1 {
		zones = slices.Clone(zones)
		slices.SortStableFunc(zones, func(a, b *zoneCells) int {
			return cmp.Compare(a.zone.instances[lrp.ProcessGuid], b.zone.instances[lrp.ProcessGuid])
		})
	}
	var winner *cell
	var winnerScore float64
	short := newInsufficient()
	for i, zc := range zones {
		for _, c := range zc.cells {
			if problems := c.misfit(lrp.Resource); problems != 0 {
				short.add(problems, c.available)
				continue
			}
			score := c.resourceScore(lrp.Resource, s.opts.StartingContainerWeight) +
				float64(LocalityOffset*c.instances[lrp.ProcessGuid]) +
				float64(c.index)*s.opts.BinPackFirstFitWeight
			if winner == nil || score < winnerScore {
				winner, winnerScore = c, score
			}
		}
		if i+1 < len(zones) && zc.zone.instances[lrp.ProcessGuid] == zones[i+1].zone.instances[lrp.ProcessGuid] {
			continue
		}
		if winner != nil {
			break
		}
	}
	if winner == nil {
		return withCordoned(short.message(lrp.Resource), found.cordoned)
	}
	winner.reserve(lrp.Resource)
	winner.instances[lrp.ProcessGuid]++
	winner.zone.instances[lrp.ProcessGuid]++
	work := winner.workList()
	work.LRPs = append(work.LRPs, lrp)
	s.inFlight++
	return ""
}

// placeTask places one task and returns "" or its placement error. Every compatible cell
// of every zone competes; the spreading term counts all tasks on a cell.
func (s *scheduler) placeTask(task TaskAuction) string {
	if s.atInFlightLimit() {
		return ErrInFlightLimit
	}
	found := s.filter(&task.Constraint)
	if found.err != "" {
		return found.err
	}
	var winner *cell
	var winnerScore float64
	short := newInsufficient()
	for _, zc := range found.zones {
		for _, c := range zc.cells {
			if problems := c.misfit(task.Resource); problems != 0 {
				short.add(problems, c.available)
				continue
			}
			score := c.resourceScore(task.Resource, s.opts.StartingContainerWeight) + float64(LocalityOffset*c.tasks)
			if winner == nil || score < winnerScore {
				winner, winnerScore = c, score
			}
		}
	}
	if winner == nil {
		return withCordoned(short.message(task.Resource), found.cordoned)
	}
	winner.reserve(task.Resource)
	winner.tasks++
	work := winner.workList()
	work.Tasks = append(work.Tasks, task)
	s.inFlight++
	return ""
}

// misfit returns the resources the cell lacks for r (0 when it fits): disk and memory
// at least as requested, and one free container.
func (c *cell) misfit(r Resource) shortfall {
	var problems shortfall
	if c.available.DiskMB < r.DiskMB {
		problems |= shortDisk
	}
	if c.available.MemoryMB < r.MemoryMB {
		problems |= shortMemory
	}
	if c.available.Containers < 1 {
		problems |= shortContainers
	}
	return problems
}

// resourceScore is the mean used fraction of memory, disk and containers after taking
// r, plus the weight of the containers already starting.
func (c *cell) resourceScore(r Resource, startingWeight float64) float64 {
	used := usedFraction(c.available.MemoryMB-r.MemoryMB, c.total.MemoryMB) +
		usedFraction(c.available.DiskMB-r.DiskMB, c.total.DiskMB) +
		usedFraction(c.available.Containers-1, c.total.Containers)
	return used/3 + float64(c.starting)*startingWeight
}

// usedFraction is 1 - remaining/total; a cell without any of a resource counts as full.
func usedFraction(remaining, total int) float64 {
	if total <= 0 {
		return 1
	}
	return 1 - float64(remaining)/float64(total)
}

// reserve takes r from the cell and counts one more starting container.
func (c *cell) reserve(r Resource) {
	c.available.MemoryMB -= r.MemoryMB
	c.available.DiskMB -= r.DiskMB
	c.available.Containers--
	c.starting++
}

// workList returns the cell's work, creating it on first use.
func (c *cell) workList() *CellWork {
	if c.work == nil {
		c.work = &CellWork{CellID: c.id}
	}
	return c.work
}
