// Package plan is the converger's pure core: from one consistent snapshot of desired
// and actual state it decides the corrective actions of one convergence pass
// (reference/bbs.md §3.2–3.5), without any I/O. Every action carries the state and
// modification tag it was decided on, so the BBS can refuse it row by row when the
// row moved on.
package plan

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Shorter names for the enum values used below.
const (
	unclaimed  = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED
	claimed    = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	running    = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	crashed    = modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED
	ordinary   = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY
	evacuating = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING
	suspect    = modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_SUSPECT
)

// presenceOf is a's presence, UNSPECIFIED counting as ORDINARY.
func presenceOf(a *modelsv1.ActualLRP) modelsv1.ActualLRPPresence {
	if p := a.GetPresence(); p != modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_UNSPECIFIED {
		return p
	}
	return ordinary
}

// Plan decides the corrective actions for snapshot s at s.TakenAt. It holds back
// destructive actions when either opts or the snapshot is paused.
func Plan(s Snapshot, opts Options) Result {
	opts.Paused = opts.Paused || s.Paused
	p := planner{s: s, opts: opts.withDefaults(), now: s.TakenAt}
	p.planLRPs()
	p.planTasks()
	p.res.Domains = p.domains()
	return p.res
}

// planner holds the state of one Plan call.
type planner struct {
	s    Snapshot
	opts Options
	now  time.Time
	res  Result
	// vanishedCells collects the missing cells named by CLAIMED/RUNNING rows.
	vanishedCells map[string]struct{}
}

// process gathers one process guid's desired info and actual rows.
type process struct {
	guid string
	info *modelsv1.DesiredLRPSchedulingInfo // nil: no desired LRP
	rows []*modelsv1.ActualLRP
}

// slot is the rows of one index, at most one per presence.
type slot struct {
	index          int32
	ord, evac, sus *modelsv1.ActualLRP
}

// planLRPs runs the LRP rules process by process, in process guid order.
func (p *planner) planLRPs() {
	p.res.LRPCounts.PresentCells = len(p.s.Cells)
	p.res.LRPCounts.Desired = len(p.s.Desired)
	p.vanishedCells = map[string]struct{}{}
	for _, proc := range p.processes() {
		p.planProcess(proc)
	}
	p.res.LRPCounts.SuspectCells = len(p.vanishedCells)
}

// processes groups the snapshot by process guid, sorted by guid.
func (p *planner) processes() []*process {
	byGUID := make(map[string]*process, len(p.s.Desired))
	get := func(guid string) *process {
		proc := byGUID[guid]
		if proc == nil {
			proc = &process{guid: guid}
			byGUID[guid] = proc
		}
		return proc
	}
	for _, d := range p.s.Desired {
		get(d.GetProcessGuid()).info = d
	}
	for _, a := range p.s.Actual {
		proc := get(a.GetProcessGuid())
		proc.rows = append(proc.rows, a)
	}
	out := make([]*process, 0, len(byGUID))
	for _, proc := range byGUID {
		out = append(out, proc)
	}
	slices.SortFunc(out, func(a, b *process) int { return cmp.Compare(a.guid, b.guid) })
	return out
}

// slots sorts rows into one slot per index, ascending. A second row of the same
// index and presence (impossible with the BBS's primary key) is ignored.
func slots(rows []*modelsv1.ActualLRP) []slot {
	slices.SortFunc(rows, func(a, b *modelsv1.ActualLRP) int { return cmp.Compare(a.GetIndex(), b.GetIndex()) })
	var out []slot
	for _, a := range rows {
		if len(out) == 0 || out[len(out)-1].index != a.GetIndex() {
			out = append(out, slot{index: a.GetIndex()})
		}
		sl := &out[len(out)-1]
		var dst **modelsv1.ActualLRP
		switch presenceOf(a) {
		case evacuating:
			dst = &sl.evac
		case suspect:
			dst = &sl.sus
		default:
			dst = &sl.ord
		}
		if *dst == nil {
			*dst = a
		}
	}
	return out
}

// planProcess runs every LRP rule on one process guid.
func (p *planner) planProcess(proc *process) {
	var starts []int32
	crashing := false
	instances := int32(0)
	if proc.info != nil {
		instances = proc.info.GetInstances()
	}
	next := int32(0) // lowest index not yet checked for a missing ORDINARY row
	for _, sl := range slots(proc.rows) {
		if sl.index >= next {
			p.createMissing(proc, next, min(sl.index, instances), &starts)
			next = sl.index
		}
		out := p.planSlot(proc, sl, &starts)
		crashing = crashing || out.crashed
		if out.hasOrdinary && sl.index >= next {
			next = sl.index + 1
		}
	}
	p.createMissing(proc, next, instances, &starts)
	if crashing {
		p.res.LRPCounts.CrashingDesired++
	}
	if len(starts) > 0 {
		slices.Sort(starts)
		p.res.LRPStarts = append(p.res.LRPStarts, models.LRPStartRequest(proc.info, starts))
	}
}

// createMissing creates the ORDINARY rows of indices from..to-1 (none exists).
func (p *planner) createMissing(proc *process, from, to int32, starts *[]int32) {
	for i := from; i < to; i++ {
		p.res.LRPCounts.Missing++
		p.res.CreateMissing = append(p.res.CreateMissing, CreateMissing{
			ProcessGUID: proc.guid,
			Index:       i,
			Domain:      proc.info.GetDomain(),
			DesiredTag:  TagOf(proc.info.GetModificationTag()),
			Because:     Because{fmt.Sprintf("index %d of %d instances has no instance", i, proc.info.GetInstances())},
		})
		*starts = append(*starts, i)
	}
}

// slotOutcome is what planning one slot found.
type slotOutcome struct {
	crashed     bool // its ORDINARY row is CRASHED
	hasOrdinary bool // it has an ORDINARY row, or a SUSPECT one being promoted
}

// planSlot runs the per-index rules on one slot.
func (p *planner) planSlot(proc *process, sl slot, starts *[]int32) slotOutcome {
	if sl.evac != nil {
		p.planEvacuating(sl.evac)
	}
	if sl.sus != nil && p.planSuspect(proc, sl) {
		return slotOutcome{hasOrdinary: true}
	}
	if sl.ord == nil {
		return slotOutcome{}
	}
	return slotOutcome{crashed: p.planOrdinary(proc, sl, starts), hasOrdinary: true}
}

// planEvacuating removes an EVACUATING row whose cell vanished (§3.2 step 2).
func (p *planner) planEvacuating(a *modelsv1.ActualLRP) {
	if p.s.cellPresent(a.GetCellId()) {
		return
	}
	p.res.RemoveEvacuating = append(p.res.RemoveEvacuating, RemoveEvacuating{
		Row:     rowOf(a),
		Because: Because{fmt.Sprintf("evacuating cell %q is gone", a.GetCellId())},
	})
}

// planSuspect removes or promotes a SUSPECT row (§3.2 steps 8–10) and reports
// whether it is promoted (which deletes the ORDINARY replacement).
func (p *planner) planSuspect(proc *process, sl slot) bool {
	a := sl.sus
	switch a.GetState() {
	case running:
		p.res.LRPCounts.SuspectRunning++
	case claimed:
		p.res.LRPCounts.SuspectClaimed++
	}
	p.noteVanishedCell(a)
	switch {
	case proc.info == nil:
		if p.destructiveAllowed(a.GetDomain()) {
			p.res.RemoveSuspects = append(p.res.RemoveSuspects, RemoveSuspect{
				Row: rowOf(a), Cause: RemoveSuspectOrphaned,
				Because: Because{"suspect instance has no desired LRP in fresh domain " + a.GetDomain()},
			})
			return false
		}
	case sl.ord != nil && sl.ord.GetState() == running && p.s.cellPresent(sl.ord.GetCellId()):
		p.res.RemoveSuspects = append(p.res.RemoveSuspects, RemoveSuspect{
			Row: rowOf(a), Cause: RemoveSuspectReplaced,
			Because: Because{fmt.Sprintf("replacement %s is running", sl.ord.GetInstanceGuid())},
		})
		return false
	}
	if !p.s.cellPresent(a.GetCellId()) {
		return false
	}
	promote := PromoteSuspect{
		Row:     rowOf(a),
		Because: Because{fmt.Sprintf("cell %q of suspect instance is back", a.GetCellId())},
	}
	if sl.ord != nil {
		r := rowOf(sl.ord)
		promote.Replacement = &r
	}
	p.res.PromoteSuspects = append(p.res.PromoteSuspects, promote)
	return true
}

// planOrdinary runs the rules for an ORDINARY row and reports whether it is CRASHED.
func (p *planner) planOrdinary(proc *process, sl slot, starts *[]int32) bool {
	a := sl.ord
	if a.GetState() == crashed {
		p.res.LRPCounts.Crashed++
	}
	p.noteVanishedCell(a)
	switch {
	case proc.info == nil:
		p.res.LRPCounts.Orphaned++
		p.retire(a, RetireNoDesired, "instance has no desired LRP")
		return false
	case a.GetIndex() < 0 || a.GetIndex() >= proc.info.GetInstances():
		p.res.LRPCounts.Extra++
		p.retire(a, RetireExtraIndex, fmt.Sprintf("index %d is beyond %d desired instances", a.GetIndex(), proc.info.GetInstances()))
		return false
	}
	switch a.GetState() {
	case claimed, running:
		if a.GetCellId() == "" || p.s.cellPresent(a.GetCellId()) {
			return false
		}
		if sl.sus != nil {
			p.res.UnclaimReplacements = append(p.res.UnclaimReplacements, UnclaimReplacement{
				Row:     rowOf(a),
				Because: Because{fmt.Sprintf("cell %q of replacement is gone and a suspect instance exists", a.GetCellId())},
			})
			return false
		}
		p.res.MarkSuspects = append(p.res.MarkSuspects, MarkSuspect{
			Row:     rowOf(a),
			Because: Because{fmt.Sprintf("cell %q is gone", a.GetCellId())},
		})
		*starts = append(*starts, a.GetIndex())
	case unclaimed:
		since := time.Unix(0, a.GetSince())
		if !since.Before(p.now.Add(-p.opts.StaleUnclaimed)) {
			return false
		}
		p.res.LRPCounts.StaleUnclaimed++
		p.unclaim(a, UnclaimStale, fmt.Sprintf("unclaimed for %s, longer than %s", p.now.Sub(since), p.opts.StaleUnclaimed), starts)
	case crashed:
		if !p.opts.Restart.ShouldRestart(a, p.now) {
			return true
		}
		p.res.LRPCounts.Restarted++
		p.unclaim(a, UnclaimCrashed, fmt.Sprintf("crash %d is due to restart", a.GetCrashCount()), starts)
		return true
	}
	return false
}

// unclaim adds an Unclaim of a and its start.
func (p *planner) unclaim(a *modelsv1.ActualLRP, cause UnclaimCause, why string, starts *[]int32) {
	p.res.Unclaims = append(p.res.Unclaims, Unclaim{Row: rowOf(a), Cause: cause, Because: Because{why}})
	*starts = append(*starts, a.GetIndex())
}

// retire adds a Retire of a when its domain is fresh and the converger not paused,
// else counts it as kept.
func (p *planner) retire(a *modelsv1.ActualLRP, cause RetireCause, why string) {
	if !p.destructiveAllowed(a.GetDomain()) {
		return
	}
	p.res.LRPCounts.Retired++
	p.res.Retires = append(p.res.Retires, Retire{
		Row: rowOf(a), Cause: cause,
		Because: Because{why + " in fresh domain " + a.GetDomain()},
	})
}

// destructiveAllowed reports whether rows of domain may be retired or removed
// (§3.4: only in fresh domains, and never while paused), counting refusals.
func (p *planner) destructiveAllowed(domain string) bool {
	switch {
	case !p.s.FreshDomains[domain]:
		p.res.LRPCounts.KeptStale++
		return false
	case p.opts.Paused:
		p.res.LRPCounts.KeptPaused++
		return false
	}
	return true
}

// noteVanishedCell records a's cell when a is CLAIMED/RUNNING on a missing cell.
func (p *planner) noteVanishedCell(a *modelsv1.ActualLRP) {
	if s := a.GetState(); (s == claimed || s == running) && a.GetCellId() != "" && !p.s.cellPresent(a.GetCellId()) {
		p.vanishedCells[a.GetCellId()] = struct{}{}
	}
}

// domains maps every fresh domain and every domain of a DesiredLRP to its freshness.
func (p *planner) domains() map[string]bool {
	out := make(map[string]bool, len(p.s.FreshDomains))
	for d, fresh := range p.s.FreshDomains {
		out[d] = fresh
	}
	for _, d := range p.s.Desired {
		out[d.GetDomain()] = p.s.FreshDomains[d.GetDomain()]
	}
	return out
}
