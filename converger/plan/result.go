package plan

import (
	"slices"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Result is a convergence plan: typed corrective actions, the auction requests for
// everything that needs placing, and counts for metrics.
type Result struct {
	// LRP actions.
	CreateMissing       []CreateMissing
	Unclaims            []Unclaim
	MarkSuspects        []MarkSuspect
	UnclaimReplacements []UnclaimReplacement
	RemoveSuspects      []RemoveSuspect
	PromoteSuspects     []PromoteSuspect
	Retires             []Retire
	RemoveEvacuating    []RemoveEvacuating
	// LRPStarts asks for every created, unclaimed and replacement index to be placed:
	// one request per process guid, indices ascending, resources, rootfs, placement
	// tags and volume drivers from the scheduling info.
	LRPStarts []*modelsv1.LRPStartRequest

	// Task actions.
	FailPending       []FailTask
	Kicks             []KickTask
	FailOnMissingCell []FailTask
	DemoteResolving   []DemoteResolving
	DeleteCompleted   []DeleteCompleted
	RetryCallbacks    []RetryCallback

	// Counts for metrics.
	LRPCounts  LRPCounts
	TaskCounts TaskCounts
	// Domains maps every domain that is fresh or has a DesiredLRP to its freshness.
	Domains map[string]bool
}

// LRPCounts are the LRP figures of one pass.
type LRPCounts struct {
	Desired         int // DesiredLRPs
	Missing         int // indices without an ORDINARY row
	Extra           int // ORDINARY rows at an index ≥ instances (retired or kept)
	Orphaned        int // ORDINARY rows without a DesiredLRP (retired or kept)
	Crashed         int // ORDINARY CRASHED rows
	CrashingDesired int // DesiredLRPs with at least one CRASHED row
	Restarted       int // CRASHED rows due to restart now
	StaleUnclaimed  int // ORDINARY UNCLAIMED rows re-auctioned
	SuspectRunning  int // SUSPECT RUNNING rows
	SuspectClaimed  int // SUSPECT CLAIMED rows
	Retired         int // Retire actions
	KeptStale       int // extra or orphaned rows kept because their domain is not fresh
	KeptPaused      int // extra or orphaned rows kept because the converger is paused
	PresentCells    int // live cells
	SuspectCells    int // distinct vanished cells still named by CLAIMED/RUNNING rows
}

// TaskCounts are the task figures of one pass.
type TaskCounts struct {
	Pending, Running, Completed, Resolving int
	Kicked                                 int
}

// Actions lists every action in the order an applier should run them: removals
// and retirements first, then suspect handling, then creations and unclaims, then
// task work.
func (r Result) Actions() []Action {
	var out []Action
	out = appendActions(out, r.RemoveEvacuating)
	out = appendActions(out, r.Retires)
	out = appendActions(out, r.RemoveSuspects)
	out = appendActions(out, r.PromoteSuspects)
	out = appendActions(out, r.MarkSuspects)
	out = appendActions(out, r.UnclaimReplacements)
	out = appendActions(out, r.CreateMissing)
	out = appendActions(out, r.Unclaims)
	out = appendActions(out, r.FailPending)
	out = appendActions(out, r.Kicks)
	out = appendActions(out, r.FailOnMissingCell)
	out = appendActions(out, r.DemoteResolving)
	out = appendActions(out, r.DeleteCompleted)
	out = appendActions(out, r.RetryCallbacks)
	return out
}

func appendActions[A Action](dst []Action, src []A) []Action {
	for _, a := range src {
		dst = append(dst, a)
	}
	return dst
}

// WithoutIndices copies starts leaving out the indices drop reports (e.g. those
// whose conditional write the BBS refused); requests left without indices are
// dropped. The input is not modified.
func WithoutIndices(starts []*modelsv1.LRPStartRequest, drop func(processGUID string, index int32) bool) []*modelsv1.LRPStartRequest {
	out := make([]*modelsv1.LRPStartRequest, 0, len(starts))
	for _, req := range starts {
		kept := slices.DeleteFunc(slices.Clone(req.GetIndices()), func(i int32) bool {
			return drop(req.GetProcessGuid(), i)
		})
		if len(kept) == 0 {
			continue
		}
		c := &modelsv1.LRPStartRequest{
			ProcessGuid:   req.GetProcessGuid(),
			Domain:        req.GetDomain(),
			Indices:       kept,
			Resource:      req.GetResource(),
			Rootfs:        req.GetRootfs(),
			PlacementTags: req.GetPlacementTags(),
			VolumeDrivers: req.GetVolumeDrivers(),
		}
		out = append(out, c)
	}
	return out
}
