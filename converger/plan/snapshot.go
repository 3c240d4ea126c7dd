package plan

import (
	"time"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Snapshot is one consistent view of desired and actual state, as the BBS read it in
// one transaction.
type Snapshot struct {
	// TakenAt is the BBS clock when the snapshot was read; the plan's "now".
	TakenAt time.Time
	// FreshDomains holds the domains whose freshness has not expired.
	FreshDomains map[string]bool
	// Cells holds the live cells by cell ID.
	Cells map[string]*modelsv1.CellPresence
	// Desired lists every DesiredLRP's scheduling info.
	Desired []*modelsv1.DesiredLRPSchedulingInfo
	// Actual lists every ActualLRP row (ordinary, evacuating and suspect).
	Actual []*modelsv1.ActualLRP
	// Tasks lists every task (definitions may be absent).
	Tasks []*modelsv1.Task
	// Paused says an operator paused destructive convergence (maintenance); Plan then
	// behaves as with Options.Paused.
	Paused bool
}

// FromResponses assembles a Snapshot from the messages of one Snapshot stream. The
// time is the first non-zero taken_at; fresh domains and cells are gathered from every
// message (the BBS sends them in the first), rows are appended in stream order, and
// the snapshot is paused when any message says so. nil messages are skipped.
func FromResponses(parts []*bbsv1.SnapshotResponse) Snapshot {
	s := Snapshot{
		FreshDomains: map[string]bool{},
		Cells:        map[string]*modelsv1.CellPresence{},
	}
	for _, p := range parts {
		if p == nil {
			continue
		}
		if s.TakenAt.IsZero() && p.GetTakenAt() != 0 {
			s.TakenAt = time.Unix(0, p.GetTakenAt())
		}
		s.Paused = s.Paused || p.GetPaused()
		for _, d := range p.GetFreshDomains() {
			s.FreshDomains[d] = true
		}
		for _, c := range p.GetCells() {
			if c != nil {
				s.Cells[c.GetCellId()] = c
			}
		}
		s.Desired = appendNonNil(s.Desired, p.GetSchedulingInfos())
		s.Actual = appendNonNil(s.Actual, p.GetActualLrps())
		s.Tasks = appendNonNil(s.Tasks, p.GetTasks())
	}
	return s
}

// appendNonNil appends the non-nil elements of src to dst.
func appendNonNil[T any](dst []*T, src []*T) []*T {
	for _, v := range src {
		if v != nil {
			dst = append(dst, v)
		}
	}
	return dst
}

// cellPresent reports whether cellID names a live cell of s.
func (s Snapshot) cellPresent(cellID string) bool {
	_, ok := s.Cells[cellID]
	return ok
}
