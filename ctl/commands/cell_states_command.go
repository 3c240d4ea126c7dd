package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"drover.dev/ctl/output"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

func cellStatesCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cell-states", GroupID: groupCluster, Args: exactArgs(),
		Short: "Ask every live cell's rep for its state: capacity, instances, tasks",
		Long: "Lists the cells from the BBS, then calls each rep's State over mutual TLS with\n" +
			"droverctl's certificate. Cells whose rep does not answer within --timeout are\n" +
			"shown with the error, and the exit status is 1.",
		Example: examples("cell-states", "cell-states --json | jq .state.available_resources"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		cells, err := s.listCells(ctx)
		if err != nil {
			return err
		}
		states, errs := eachRep(s, cells, func(rc *repConn) (*repv1.StateResponse, error) {
			callCtx, cancel := context.WithTimeout(ctx, s.opts.timeout)
			defer cancel()
			return rc.client.State(callCtx, &repv1.StateRequest{})
		})
		rows := make([]output.CellState, len(cells))
		for i, cell := range cells {
			rows[i] = output.CellState{Cell: cell, State: states[i], Err: errs[i]}
		}
		if err := printList(s, output.CellStateTable(rows), rows, fallible(output.CellStateView)); err != nil {
			return err
		}
		return unreachable(cells, errs)
	})
	return cmd
}

// unreachable names the cells whose rep failed; nil when every rep answered.
func unreachable[T interface{ GetCellId() string }](cells []T, errs []error) error {
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, cells[i].GetCellId())
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d reps did not answer: %s", len(failed), len(cells), strings.Join(failed, ", "))
}
