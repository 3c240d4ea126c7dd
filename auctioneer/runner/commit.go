package runner

import (
	"context"
	"fmt"

	"drover.dev/auctioneer/auction"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// RejectedByCell is the placement error of work a cell's rep refused in Perform.
func RejectedByCell(cellID string) string {
	return fmt.Sprintf("cell %s rejected the work", cellID)
}

// commit sends every cell its work in parallel. Work a rep refuses moves from the
// cell's work to the failures. When the call itself fails nothing is marked failed: the
// rep may have taken part of it, and convergence repairs the rest (as upstream).
func (r *Runner) commit(ctx context.Context, cells cellSet, result *auction.Result) {
	refused := make([]*repv1.PerformResponse, len(result.Work))
	forEach(len(result.Work), r.opts.Workers, func(i int) {
		work := result.Work[i]
		rep := cells.reps[work.CellID]
		if rep == nil {
			r.log.Error("no-rep-for-cell", "cell_id", work.CellID)
			return
		}
		callCtx, cancel := context.WithTimeout(ctx, r.opts.CommunicationTimeout)
		defer cancel()
		resp, err := rep.Perform(callCtx, work.PerformRequest())
		if err != nil {
			r.log.Error("failed-to-perform", "cell_id", work.CellID, "lrps", len(work.LRPs), "tasks", len(work.Tasks), "error", err.Error())
			return
		}
		refused[i] = resp
	})
	for i := range result.Work {
		if refused[i] != nil {
			moveRefused(&result.Work[i], refused[i], result)
		}
	}
}

// moveRefused moves the items a rep returned from its cell's work to the failures.
func moveRefused(work *auction.CellWork, resp *repv1.PerformResponse, result *auction.Result) {
	if len(resp.GetFailedLrps()) == 0 && len(resp.GetFailedTasks()) == 0 {
		return
	}
	reason := RejectedByCell(work.CellID)
	refusedLRPs := map[auction.LRPKey]bool{}
	for _, lrp := range resp.GetFailedLrps() {
		refusedLRPs[auction.LRPKey{ProcessGuid: lrp.GetProcessGuid(), Index: lrp.GetIndex()}] = true
	}
	kept := work.LRPs[:0]
	for _, lrp := range work.LRPs {
		if refusedLRPs[lrp.Key()] {
			result.FailedLRPs = append(result.FailedLRPs, auction.FailedLRP{LRPAuction: lrp, PlacementError: reason})
			continue
		}
		kept = append(kept, lrp)
	}
	work.LRPs = kept

	refusedTasks := map[string]bool{}
	for _, task := range resp.GetFailedTasks() {
		refusedTasks[task.GetTaskGuid()] = true
	}
	keptTasks := work.Tasks[:0]
	for _, task := range work.Tasks {
		if refusedTasks[task.TaskGuid] {
			result.FailedTasks = append(result.FailedTasks, auction.FailedTask{TaskAuction: task, PlacementError: reason})
			continue
		}
		keptTasks = append(keptTasks, task)
	}
	work.Tasks = keptTasks
}
