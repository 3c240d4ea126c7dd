package pass

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"drover.dev/bbs/client"
	"drover.dev/converger/plan"
	"drover.dev/lib/logging"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// DefaultChunkSize is the most actions sent in one Apply call.
const DefaultChunkSize = 1000

// DefaultWorkers is how many Apply calls run at once by default.
const DefaultWorkers = 4

// DefaultTimeout bounds each BBS call when Options.Timeout is not set.
const DefaultTimeout = 10 * time.Second

// Options shape a Runner.
type Options struct {
	// Owner is this converger's lock owner id, reported with each pass.
	Owner string
	// Plan tunes the planner (the snapshot's paused flag is added to Plan.Paused).
	Plan plan.Options
	// Timeout bounds each BBS call; the snapshot stream counts as one call.
	Timeout time.Duration
	// ChunkSize is the most actions per Apply call (default DefaultChunkSize).
	ChunkSize int
	// Workers is how many Apply calls run at once (default DefaultWorkers); the actions
	// of one process guid or task always go through the same stream of calls, in order.
	Workers int
	// Logger receives one "converger-action" line per action; nil discards.
	Logger *slog.Logger
	// Metrics, when set, records every pass.
	Metrics *Metrics
}

// Runner runs convergence passes.
type Runner struct {
	bbs  bbsv1.ConvergenceServiceClient
	opts Options
	log  *slog.Logger
}

// New returns a Runner of passes against bbs.
func New(bbs bbsv1.ConvergenceServiceClient, opts Options) *Runner {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	return &Runner{bbs: bbs, opts: opts, log: logging.OrDiscard(opts.Logger)}
}

// Summary is what one pass did.
type Summary struct {
	// Pass is the summary reported to the BBS.
	Pass *bbsv1.ConvergencePass
	// Result is the plan (zero when the snapshot failed); Planned says whether it was made.
	Result  plan.Result
	Planned bool
	// Phase durations.
	Snapshot, Plan, Apply time.Duration
	// Outcome totals of the actions.
	Applied, Refused, Failed int
}

// Total is the time of the three phases together.
func (s Summary) Total() time.Duration { return s.Snapshot + s.Plan + s.Apply }

// Run runs one pass: snapshot, plan, apply, metrics, report. It returns an error when
// any phase or the report failed; the summary says how far it got.
func (r *Runner) Run(ctx context.Context) (Summary, error) {
	sum, err := r.converge(ctx)
	sum.Pass = r.passProto(sum, err)
	r.opts.Metrics.observe(sum, err)
	if reportErr := r.report(ctx, sum.Pass); reportErr != nil {
		err = errors.Join(err, reportErr)
	}
	return sum, err
}

// converge runs the three phases.
func (r *Runner) converge(ctx context.Context) (Summary, error) {
	var sum Summary
	start := time.Now()
	snap, err := r.snapshot(ctx)
	sum.Snapshot = time.Since(start)
	if err != nil {
		return sum, fmt.Errorf("snapshot: %w", err)
	}

	start = time.Now()
	sum.Result = plan.Plan(snap, r.opts.Plan)
	sum.Planned = true
	sum.Plan = time.Since(start)
	paused := snap.Paused || r.opts.Plan.Paused
	sum.Pass = &bbsv1.ConvergencePass{
		TakenAt: snap.TakenAt.UnixNano(), Paused: paused, ActualLrps: int32(len(snap.Actual)),
		FreshDomains: slices.Sorted(maps.Keys(snap.FreshDomains)),
	}

	start = time.Now()
	err = r.apply(ctx, sum.Result, &sum)
	sum.Apply = time.Since(start)
	return sum, err
}

// snapshot reads one whole snapshot stream.
func (r *Runner) snapshot(ctx context.Context) (plan.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	stream, err := r.bbs.Snapshot(ctx, &bbsv1.SnapshotRequest{})
	if err != nil {
		return plan.Snapshot{}, err
	}
	var parts []*bbsv1.SnapshotResponse
	if err := client.Drain(stream, func(part *bbsv1.SnapshotResponse) error {
		parts = append(parts, part)
		return nil
	}); err != nil {
		return plan.Snapshot{}, err
	}
	if len(parts) == 0 {
		return plan.Snapshot{}, errors.New("empty snapshot stream")
	}
	return plan.FromResponses(parts), nil
}

// apply sends the LRP actions, then the task actions, with their auctions deferred,
// tallies the outcomes, and then asks the BBS to auction everything that was applied
// and needs placing in one request (issue 4: one auction request per pass).
func (r *Runner) apply(ctx context.Context, res plan.Result, sum *Summary) error {
	lrps, tasks := Translate(res.Actions())
	lrpOutcomes, errLRP := applyItems(ctx, r, lrps, lrpPartition, func(ctx context.Context, ps []*bbsv1.LRPAction) ([]result, error) {
		resp, err := r.bbs.ApplyLRPActions(ctx, &bbsv1.ApplyLRPActionsRequest{Actions: ps, DeferAuction: true})
		return results(resp.GetResults()), err
	}, sum)
	taskOutcomes, errTask := applyItems(ctx, r, tasks, taskPartition, func(ctx context.Context, ps []*bbsv1.TaskAction) ([]result, error) {
		resp, err := r.bbs.ApplyTaskActions(ctx, &bbsv1.ApplyTaskActionsRequest{Actions: ps, DeferAuction: true})
		return results(resp.GetResults()), err
	}, sum)
	errAuction := r.requestAuctions(ctx, auctionsOf(res, lrps, lrpOutcomes, tasks, taskOutcomes))
	return errors.Join(wrap("apply lrp actions", errLRP), wrap("apply task actions", errTask), wrap("request auctions", errAuction))
}

// requestAuctions sends one RequestAuctions call, unless there is nothing to place.
func (r *Runner) requestAuctions(ctx context.Context, req *bbsv1.RequestAuctionsRequest) error {
	if len(req.GetLrps()) == 0 && len(req.GetTaskGuids()) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	_, err := r.bbs.RequestAuctions(ctx, req)
	return err
}

// auctionsOf is what a pass asks to place: the plan's LRP starts without the indices
// whose creating, unclaiming or suspecting action was not applied, and the kicked tasks
// whose kick was applied.
func auctionsOf(res plan.Result, lrps []Item[*bbsv1.LRPAction], lrpOutcomes []outcome,
	tasks []Item[*bbsv1.TaskAction], taskOutcomes []outcome) *bbsv1.RequestAuctionsRequest {
	type index struct {
		guid string
		i    int32
	}
	notApplied := map[index]bool{}
	for i, it := range lrps {
		if lrpOutcomes[i].kind == outcomeApplied {
			continue
		}
		switch a := it.Action.(type) {
		case plan.CreateMissing:
			notApplied[index{a.ProcessGUID, a.Index}] = true
		case plan.Unclaim:
			notApplied[index{a.ProcessGUID, a.Index}] = true
		case plan.MarkSuspect:
			notApplied[index{a.ProcessGUID, a.Index}] = true
		}
	}
	req := &bbsv1.RequestAuctionsRequest{}
	starts := plan.WithoutIndices(res.LRPStarts, func(guid string, i int32) bool { return notApplied[index{guid, i}] })
	for _, s := range starts {
		req.Lrps = append(req.Lrps, &bbsv1.LRPIndices{ProcessGuid: s.GetProcessGuid(), Indices: s.GetIndices()})
	}
	for i, it := range tasks {
		if k, ok := it.Action.(plan.KickTask); ok && taskOutcomes[i].kind == outcomeApplied {
			req.TaskGuids = append(req.TaskGuids, k.TaskGUID)
		}
	}
	return req
}

// result is what the BBS says of one action (LRPActionResult or TaskActionResult).
type result interface {
	GetApplied() bool
	GetRefusedReason() string
}

// results widens a typed result slice.
func results[R result](rs []R) []result {
	out := make([]result, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// outcome is what became of one action.
type outcome struct {
	kind    string // outcomeApplied, outcomeRefused or outcomeError
	refused string
	err     error
}

// applyItems sends items over up to Workers parallel streams of calls: the items of
// one partition (one process guid, one task) stay in one stream, in plan order, so
// actions on the same instance are applied in order. Each stream sends chunks of the
// chunk size, one deadline per call, and tries every chunk. Outcomes are logged and
// counted in plan order afterwards and returned with the first call error.
func applyItems[P any](ctx context.Context, r *Runner, items []Item[P], partition func(P) string,
	call func(context.Context, []P) ([]result, error), sum *Summary) ([]outcome, error) {
	outcomes := make([]outcome, len(items))
	streams := partitionIndices(len(items), r.opts.Workers, func(i int) string { return partition(items[i].Proto) })
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for s, indices := range streams {
		wg.Go(func() {
			for chunk := range slices.Chunk(indices, r.opts.ChunkSize) {
				if err := applyChunk(ctx, r.opts.Timeout, items, chunk, call, outcomes); err != nil && errs[s] == nil {
					errs[s] = err
				}
			}
		})
	}
	wg.Wait()
	for i, it := range items {
		r.record(it.Action, outcomes[i], sum)
	}
	for _, err := range errs {
		if err != nil {
			return outcomes, err
		}
	}
	return outcomes, nil
}

// applyChunk sends the items at indices in one call and stores their outcomes.
func applyChunk[P any](ctx context.Context, timeout time.Duration, items []Item[P], indices []int,
	call func(context.Context, []P) ([]result, error), outcomes []outcome) error {
	protos := make([]P, len(indices))
	for j, i := range indices {
		protos[j] = items[i].Proto
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := call(ctx, protos)
	if err == nil && len(res) != len(indices) {
		err = fmt.Errorf("bbs returned %d results for %d actions", len(res), len(indices))
	}
	for j, i := range indices {
		switch {
		case err != nil:
			outcomes[i] = outcome{kind: outcomeError, err: err}
		case res[j].GetApplied():
			outcomes[i] = outcome{kind: outcomeApplied}
		default:
			outcomes[i] = outcome{kind: outcomeRefused, refused: res[j].GetRefusedReason()}
		}
	}
	return err
}

// partitionIndices spreads 0..n-1 over at most streams lists by the hash of key(i),
// keeping ascending order in each list; empty lists are left out.
func partitionIndices(n, streams int, key func(int) string) [][]int {
	streams = max(1, min(streams, n))
	out := make([][]int, streams)
	for i := range n {
		h := fnv.New32a()
		_, _ = h.Write([]byte(key(i)))
		s := int(h.Sum32() % uint32(streams))
		out[s] = append(out[s], i)
	}
	return slices.DeleteFunc(out, func(l []int) bool { return len(l) == 0 })
}

// lrpPartition is the process guid an LRP action concerns.
func lrpPartition(a *bbsv1.LRPAction) string {
	if c := a.GetCreateMissing(); c != nil {
		return c.GetKey().GetProcessGuid()
	}
	if p := a.GetPromoteSuspect(); p != nil {
		return p.GetSuspect().GetKey().GetProcessGuid()
	}
	for _, c := range []*bbsv1.LRPRowCondition{a.GetUnclaim(), a.GetMarkSuspect(), a.GetUnclaimReplacement(), a.GetRemove(), a.GetRetire()} {
		if c != nil {
			return c.GetKey().GetProcessGuid()
		}
	}
	return ""
}

// taskPartition is the task guid a task action concerns.
func taskPartition(a *bbsv1.TaskAction) string {
	if f := a.GetFail(); f != nil {
		return f.GetTask().GetTaskGuid()
	}
	for _, c := range []*bbsv1.TaskRowCondition{a.GetKick(), a.GetDemoteResolving(), a.GetDeleteCompleted(), a.GetRetryCallback()} {
		if c != nil {
			return c.GetTaskGuid()
		}
	}
	return ""
}

// Action outcomes, as logged and counted.
const (
	outcomeApplied = "applied"
	outcomeRefused = "refused"
	outcomeError   = "error"
)

// record logs one action's outcome and counts it.
func (r *Runner) record(a plan.Action, o outcome, sum *Summary) {
	attrs := []any{"kind", a.Kind(), "subject", a.Subject(), "reason", a.Why(), "outcome", o.kind}
	switch o.kind {
	case outcomeApplied:
		sum.Applied++
		r.log.Info("converger-action", attrs...)
	case outcomeRefused:
		sum.Refused++
		r.log.Info("converger-action", append(attrs, "refused_reason", o.refused)...)
	default:
		sum.Failed++
		r.log.Error("converger-action", append(attrs, "error", o.err.Error())...)
	}
	r.opts.Metrics.action(a.Kind(), o.kind)
}

// passProto is the pass summary reported to the BBS.
func (r *Runner) passProto(sum Summary, err error) *bbsv1.ConvergencePass {
	p := sum.Pass
	if p == nil {
		p = &bbsv1.ConvergencePass{Paused: r.opts.Plan.Paused}
	}
	p.Owner = r.opts.Owner
	p.SnapshotNanos, p.PlanNanos, p.ApplyNanos = int64(sum.Snapshot), int64(sum.Plan), int64(sum.Apply)
	p.ActionsApplied, p.ActionsRefused, p.ActionsFailed = int32(sum.Applied), int32(sum.Refused), int32(sum.Failed)
	if err != nil {
		p.Error = err.Error()
	}
	if !sum.Planned {
		return p
	}
	l, t, res := sum.Result.LRPCounts, sum.Result.TaskCounts, sum.Result
	p.DesiredLrps, p.Missing, p.Extra, p.Orphaned = int32(l.Desired), int32(l.Missing), int32(l.Extra), int32(l.Orphaned)
	p.Crashed, p.Restarted, p.StaleUnclaimed = int32(l.Crashed), int32(l.Restarted), int32(l.StaleUnclaimed)
	p.SuspectRunning, p.SuspectClaimed, p.Retired = int32(l.SuspectRunning), int32(l.SuspectClaimed), int32(l.Retired)
	p.KeptStale, p.KeptPaused, p.PresentCells, p.SuspectCells = int32(l.KeptStale), int32(l.KeptPaused), int32(l.PresentCells), int32(l.SuspectCells)
	p.TasksKicked = int32(t.Kicked)
	p.TasksFailed = int32(len(res.FailPending) + len(res.FailOnMissingCell))
	p.TasksDeleted = int32(len(res.DeleteCompleted))
	return p
}

// report sends the pass summary to the BBS.
func (r *Runner) report(ctx context.Context, p *bbsv1.ConvergencePass) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	if _, err := r.bbs.ReportConvergencePass(ctx, &bbsv1.ReportConvergencePassRequest{Pass: p}); err != nil {
		return fmt.Errorf("report pass: %w", err)
	}
	return nil
}

// wrap prefixes a non-nil error.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
