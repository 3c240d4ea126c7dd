package runner

import (
	"context"

	"drover.dev/auctioneer/auction"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// report writes every failure back to the BBS: FailActualLRP with the placement error
// for instances, RejectTask with the reason for tasks. There is no retry here: the
// converger re-auctions what stays unplaced.
func (r *Runner) report(ctx context.Context, result auction.Result) {
	lrps, tasks := result.FailedLRPs, result.FailedTasks
	forEach(len(lrps)+len(tasks), r.opts.Workers, func(i int) {
		callCtx, cancel := context.WithTimeout(ctx, r.opts.CommunicationTimeout)
		defer cancel()
		if i < len(lrps) {
			lrp := lrps[i]
			key := &modelsv1.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Domain: lrp.Domain}
			if err := r.bbs.FailActualLRP(callCtx, key, lrp.PlacementError); err != nil {
				r.log.Error("failed-to-fail-actual-lrp", "process_guid", lrp.ProcessGuid, "index", lrp.Index, "error", err.Error())
			}
			return
		}
		task := tasks[i-len(lrps)]
		if err := r.bbs.RejectTask(callCtx, task.TaskGuid, task.PlacementError); err != nil {
			r.log.Error("failed-to-reject-task", "task_guid", task.TaskGuid, "error", err.Error())
		}
	})
}
