package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

func logsCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "logs [--index N] [--follow | --previous] APP|GUID", GroupID: groupLRPs, Args: exactArgs("APP|GUID"),
		Short: "Print the output of an LRP's or app's instances or of a task",
		Long: "GUID is a process guid or a task guid; APP an app's name (its newest version).\n" +
			"droverctl finds the cells of the LRP's actual LRPs (or the task's cell) in the\n" +
			"BBS and streams the kept lines from each cell's rep, as \"TIME [SOURCE/INDEX] text\".\n" +
			"Without --follow the lines of all cells are printed in time order; with --follow\n" +
			"new lines follow as they are written, from all cells merged, until interrupted.\n" +
			"--previous prints instead the last lines of the instances' crashed predecessors,\n" +
			"which every cell's rep keeps for a while after a crash (200 lines, 10 minutes).",
		Example: examples("logs my-app", "logs my-app --index 2 --follow", "logs my-app --previous", "logs my-task --json | jq -r .text"),
	}
	var index uint64Value
	cmd.Flags().Var(&index, "index", "only the instance with this `N`")
	follow := cmd.Flags().Bool("follow", false, "keep streaming new lines until interrupted")
	previous := cmd.Flags().Bool("previous", false, "print the last lines of crashed instances instead")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		if *follow && *previous {
			return usagef("--previous cannot follow: a crashed instance writes no more lines")
		}
		req := &repv1.StreamLogsRequest{Follow: *follow}
		if index.set {
			if index.n > 1<<31-1 {
				return usagef("--index %d is too large", index.n)
			}
			i := int32(index.n)
			req.Index = &i
		}
		target, err := s.resolveApp(ctx, args[0])
		if err != nil {
			return err
		}
		guid := target.guids[0] // an app's newest version
		if *previous {
			req.ProcessGuid, req.Previous = guid, true
			return s.previousLogs(ctx, req)
		}
		cells, err := s.logCells(ctx, guid, req)
		if err != nil {
			return err
		}
		return s.streamLogs(ctx, cells, req)
	})
	return cmd
}

// logCells fills req with the LRP or task named guid and returns the live cells that
// run it: those of its actual LRPs (of req.Index when set), else the task's cell.
func (s *session) logCells(ctx context.Context, guid string, req *repv1.StreamLogsRequest) ([]*modelsv1.CellPresence, error) {
	actuals, err := listActualLRPs(ctx, s, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid, Index: req.Index})
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, a := range actuals {
		if a.GetCellId() != "" {
			want[a.GetCellId()] = true
		}
	}
	if len(actuals) > 0 {
		req.ProcessGuid = guid
	} else {
		if req.Index != nil {
			return nil, models.NewError(models.ErrTypeResourceNotFound, "no actual LRP %s with index %d", guid, req.GetIndex())
		}
		task, err := s.getTask(ctx, guid)
		if err != nil {
			if models.FromError(err).Type == models.ErrTypeResourceNotFound {
				return nil, models.NewError(models.ErrTypeResourceNotFound, "no LRP or task %s", guid)
			}
			return nil, err
		}
		req.TaskGuid = guid
		if id := task.GetTask().GetCellId(); id != "" {
			want[id] = true
		}
	}
	if len(want) == 0 {
		return nil, models.NewError(models.ErrTypeResourceNotFound, "%s is not placed on any cell", guid)
	}
	all, err := s.listCells(ctx)
	if err != nil {
		return nil, err
	}
	var cells []*modelsv1.CellPresence
	for _, cell := range all {
		if want[cell.GetCellId()] {
			cells = append(cells, cell)
		}
	}
	if len(cells) == 0 {
		return nil, models.NewError(models.ErrTypeResourceNotFound, "the cells of %s are gone", guid)
	}
	return cells, nil
}

// getTask fetches one task, bounded by --timeout.
func (s *session) getTask(ctx context.Context, guid string) (*bbsv1.GetTaskResponse, error) {
	c, callCtx, cancel, err := s.begin(ctx)
	defer cancel()
	if err != nil {
		return nil, err
	}
	return c.GetTask(callCtx, &bbsv1.GetTaskRequest{TaskGuid: guid})
}

// streamLogs prints the lines of every cell: sorted by time when not following, merged
// as they arrive when following.
func (s *session) streamLogs(ctx context.Context, cells []*modelsv1.CellPresence, req *repv1.StreamLogsRequest) error {
	if !req.GetFollow() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.timeout)
		defer cancel()
	}
	var (
		mu    sync.Mutex
		lines []*repv1.LogLine
		werr  error
	)
	emit := func(batch []*repv1.LogLine) {
		mu.Lock()
		defer mu.Unlock()
		if !req.GetFollow() {
			lines = append(lines, batch...)
			return
		}
		for _, l := range batch {
			if werr == nil {
				werr = s.writeLogLine(l)
			}
		}
	}
	_, errs := eachRep(s, cells, func(rc *repConn) (struct{}, error) {
		return struct{}{}, receiveLogs(ctx, rc, req, emit)
	})
	if werr != nil {
		return werr
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].GetTimestamp() < lines[j].GetTimestamp() })
	for _, l := range lines {
		if err := s.writeLogLine(l); err != nil {
			return err
		}
	}
	if req.GetFollow() && ctx.Err() != nil {
		return nil // interrupted: the normal end of --follow
	}
	for i, err := range errs {
		if err != nil {
			return s.repError(cells[i], err)
		}
	}
	return nil
}

// receiveLogs streams one rep's lines into emit until the stream ends.
func receiveLogs(ctx context.Context, rc *repConn, req *repv1.StreamLogsRequest, emit func([]*repv1.LogLine)) error {
	stream, err := rc.client.StreamLogs(ctx, req)
	if err != nil {
		return err
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil && status.Code(err) == codes.Canceled {
				return nil
			}
			return err
		}
		emit(resp.GetLines())
	}
}

// writeLogLine prints one line as text or, with --json, as a JSON object.
func (s *session) writeLogLine(l *repv1.LogLine) error {
	if s.json() {
		return s.jsonLine(output.LogLineView(l))
	}
	_, err := fmt.Fprintln(s.stdout, output.FormatLogLine(l))
	return err
}
