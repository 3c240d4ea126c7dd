package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// ErrTypeTimedOut is the error type of a wait that did not end within --timeout.
const ErrTypeTimedOut models.ErrorType = "TimedOut"

const (
	// DefaultEvacuationWait bounds evacuate --wait unless --timeout says otherwise.
	DefaultEvacuationWait = 15 * time.Minute
	// defaultPollInterval is how often evacuate --wait asks the BBS.
	defaultPollInterval = 2 * time.Second
	// progressRepeat is how long an unchanged progress line stays unrepeated.
	progressRepeat = 30 * time.Second
)

const evacuateDetails = "Finds the cell's rep in the BBS's live cells and asks it over mutual TLS (with\n" +
	"droverctl's certificate) to evacuate, as SIGTERM does: the cell takes no new work,\n" +
	"hands its instances over to other cells, and the rep exits when done or when its\n" +
	"evacuation timeout passes.\n\n" +
	"--wait then polls the BBS until the cell's presence is gone, printing how many of\n" +
	"the cell's instances are in which state when that changes. With --wait, --timeout\n" +
	"bounds the whole wait (default 15m) and each call is bounded by 10s or less."

func evacuateCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "evacuate [--wait] CELL_ID", GroupID: groupOps, Args: exactArgs("CELL_ID"),
		Short:   "Drain a cell: hand its instances to other cells, then stop its rep",
		Long:    evacuateDetails,
		Example: examples("evacuate cell-z1-0", "evacuate cell-z1-0 --wait --timeout 20m"),
	}
	wait := cmd.Flags().Bool("wait", false, "wait until the cell's presence is gone, printing progress")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		limit := s.opts.timeout
		if *wait {
			if !s.opts.timeoutSet {
				limit = DefaultEvacuationWait
			}
			s.opts.timeout = min(limit, DefaultTimeout)
		}
		start := s.now()
		cell, err := s.liveCell(ctx, args[0])
		if err != nil {
			return err
		}
		resp, err := s.evacuate(ctx, cell)
		if err != nil {
			return err
		}
		view := evacuateView{CellID: cell.GetCellId(), AlreadyEvacuating: resp.GetAlreadyEvacuating()}
		format := "cell %s is evacuating"
		if view.AlreadyEvacuating {
			format = "cell %s is already evacuating"
		}
		if err := s.report(view, format, cell.GetCellId()); err != nil {
			return err
		}
		if !*wait {
			return nil
		}
		return s.waitEvacuated(ctx, cell.GetCellId(), start, limit)
	})
	return cmd
}

// evacuateView is the JSON line of the evacuation request.
type evacuateView struct {
	CellID            string `json:"cell_id"`
	AlreadyEvacuating bool   `json:"already_evacuating"`
}

// liveCell finds a cell among the BBS's live cells.
func (s *session) liveCell(ctx context.Context, cellID string) (*modelsv1.CellPresence, error) {
	cells, err := s.listCells(ctx)
	if err != nil {
		return nil, err
	}
	if cell := findCell(cells, cellID); cell != nil {
		return cell, nil
	}
	return nil, models.NewError(models.ErrTypeResourceNotFound, "cell %s is not live: the BBS lists no presence for it", cellID)
}

// findCell returns the cell with id cellID, or nil.
func findCell(cells []*modelsv1.CellPresence, cellID string) *modelsv1.CellPresence {
	for _, c := range cells {
		if c.GetCellId() == cellID {
			return c
		}
	}
	return nil
}

// evacuate asks the rep of cell to evacuate, bounded by --timeout.
func (s *session) evacuate(ctx context.Context, cell *modelsv1.CellPresence) (*repv1.EvacuateResponse, error) {
	rc, err := s.dialRep(cell)
	if err != nil {
		return nil, s.repError(cell, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.opts.timeout)
	defer cancel()
	resp, err := rc.client.Evacuate(callCtx, &repv1.EvacuateRequest{})
	if err != nil {
		return nil, s.repError(cell, err)
	}
	return resp, nil
}

// waitEvacuated polls the BBS until the cell's presence is gone or limit passes,
// printing progress when it changes (and at least every 30s). A failed poll is
// reported on stderr and retried at the next tick.
func (s *session) waitEvacuated(ctx context.Context, cellID string, start time.Time, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ticker := time.NewTicker(s.pollInterval())
	defer ticker.Stop()
	var lastSummary string
	var lastPrinted time.Time
	for {
		progress, err := s.pollEvacuation(waitCtx, cellID, start)
		switch {
		case waitCtx.Err() != nil || (err != nil && !time.Now().Before(deadline)):
			// interrupted or out of time (the poll's own deadline may fire first): decided below
		case err != nil:
			fmt.Fprintf(s.stderr, "droverctl: %s (retrying)\n", output.Printable(s.describeError(err).Message))
		case progress.Summary() != lastSummary || s.now().Sub(lastPrinted) >= progressRepeat:
			if err := s.printProgress(progress); err != nil {
				return err
			}
			if progress.Done {
				return nil
			}
			lastSummary, lastPrinted = progress.Summary(), s.now()
		}
		select {
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return models.NewError(ErrTypeTimedOut, "cell %s is still present after %s (--timeout)", cellID, limit)
		case <-ticker.C:
		}
	}
}

// pollEvacuation reports whether the cell is gone and, if not, its instances.
func (s *session) pollEvacuation(ctx context.Context, cellID string, start time.Time) (output.EvacuationProgress, error) {
	elapsed := s.now().Sub(start)
	cells, err := s.listCells(ctx)
	if err != nil {
		return output.EvacuationProgress{}, err
	}
	if findCell(cells, cellID) == nil {
		done := output.NewEvacuationProgress(cellID, elapsed, nil)
		done.Done = true
		return done, nil
	}
	lrps, err := listActualLRPs(ctx, s, &bbsv1.ListActualLRPsRequest{CellId: cellID})
	if err != nil {
		return output.EvacuationProgress{}, err
	}
	return output.NewEvacuationProgress(cellID, elapsed, lrps), nil
}

// printProgress writes one progress line, text or JSON.
func (s *session) printProgress(p output.EvacuationProgress) error {
	if s.json() {
		return s.jsonLine(p)
	}
	_, err := fmt.Fprintln(s.stdout, p.String())
	return err
}

// pollInterval is Env.PollInterval or 2s.
func (s *session) pollInterval() time.Duration {
	if s.env.PollInterval > 0 {
		return s.env.PollInterval
	}
	return defaultPollInterval
}
