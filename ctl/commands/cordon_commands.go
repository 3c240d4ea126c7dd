package commands

import (
	"context"

	"github.com/spf13/cobra"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

func cordonCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cordon [--reason TEXT] CELL_ID", Args: exactArgs("CELL_ID"),
		Short: "Make a cell take no new work, leaving what runs there",
		Long: "The auctioneer skips a cordoned cell. The cordon is kept by cell id across\n" +
			"presence renewals and rep restarts, until 'cell uncordon'. Cordoning a cordoned\n" +
			"cell updates the reason. 'cells' shows the CORDONED column.",
		Example: examples(`cell cordon cell-z1-0 --reason "disk replacement"`),
	}
	reason := cmd.Flags().String("reason", "", "why the cell is cordoned, shown by 'cells --json' (`TEXT`)")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		if _, err := c.CordonCell(callCtx, &bbsv1.CordonCellRequest{CellId: args[0], Reason: *reason}); err != nil {
			return err
		}
		view := cordonView{CellID: args[0], Cordoned: true, Reason: *reason}
		return s.report(view, "cell %s is cordoned", args[0])
	})
	return cmd
}

func uncordonCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "uncordon CELL_ID", Args: exactArgs("CELL_ID"),
		Short:   "Let a cordoned cell take new work again",
		Long:    "Lifting the cordon of a cell that has none is not an error; the output says so.",
		Example: examples("cell uncordon cell-z1-0", "cell uncordon cell-z1-0 --json | jq .was_cordoned"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		resp, err := c.UncordonCell(callCtx, &bbsv1.UncordonCellRequest{CellId: args[0]})
		if err != nil {
			return err
		}
		view := uncordonView{CellID: args[0], WasCordoned: resp.GetWasCordoned()}
		if !view.WasCordoned {
			return s.report(view, "cell %s was not cordoned", args[0])
		}
		return s.report(view, "cell %s is uncordoned", args[0])
	})
	return cmd
}

// cordonView is the JSON line of "cell cordon".
type cordonView struct {
	CellID   string `json:"cell_id"`
	Cordoned bool   `json:"cordoned"`
	Reason   string `json:"cordon_reason,omitempty"`
}

// uncordonView is the JSON line of "cell uncordon".
type uncordonView struct {
	CellID      string `json:"cell_id"`
	WasCordoned bool   `json:"was_cordoned"`
}
