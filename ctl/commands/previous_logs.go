package commands

import (
	"context"
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// previousLogs prints the kept last lines of the crashed predecessors of req's
// instances. A crashed instance may restart on another cell, so every live cell's rep
// is asked; those that keep nothing for it answer NotFound. A cell that fails
// otherwise is a warning when others had lines, else the error.
func (s *session) previousLogs(ctx context.Context, req *repv1.StreamLogsRequest) error {
	cells, err := s.listCells(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
	defer cancel()
	batches, errs := eachRep(s, cells, func(rc *repConn) ([]*repv1.LogLine, error) {
		var lines []*repv1.LogLine
		err := receiveLogs(ctx, rc, req, func(batch []*repv1.LogLine) { lines = append(lines, batch...) })
		return lines, err
	})
	var lines []*repv1.LogLine
	for _, b := range batches {
		lines = append(lines, b...)
	}
	var failed error
	for i, err := range errs {
		if err == nil || status.Code(err) == codes.NotFound || status.Code(err) == codes.Unimplemented {
			continue // nothing kept there, or a rep that keeps nothing
		}
		failed = s.repError(cells[i], err)
		if len(lines) == 0 {
			return failed
		}
		fmt.Fprintf(s.stderr, "droverctl: warning: %s\n", output.Printable(s.describeError(failed).Error()))
	}
	if len(lines) == 0 {
		what := req.GetProcessGuid()
		if req.Index != nil {
			what = fmt.Sprintf("%s index %d", what, req.GetIndex())
		}
		return models.NewError(models.ErrTypeResourceNotFound, "no cell keeps the output of a crashed instance of %s (kept for 10 minutes after a crash)", what)
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].GetTimestamp() < lines[j].GetTimestamp() })
	for _, l := range lines {
		if err := s.writeLogLine(l); err != nil {
			return err
		}
	}
	return nil
}
