package commands

import (
	"context"
	"flag"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

func cordonCommand() *command {
	return &command{
		name: "cell cordon", flagsUsage: "[--reason TEXT]", group: groupOps, args: []string{"CELL_ID"},
		summary: "Make a cell take no new work, leaving what runs there",
		details: "The auctioneer skips a cordoned cell. The cordon is kept by cell id across\n" +
			"presence renewals and rep restarts, until 'cell uncordon'. Cordoning a cordoned\n" +
			"cell updates the reason. 'cells' shows the CORDONED column.",
		examples: []string{`cell cordon cell-z1-0 --reason "disk replacement"`},
		setup: func(fs *flag.FlagSet) action {
			reason := fs.String("reason", "", "why the cell is cordoned, shown by 'cells --json' (`TEXT`)")
			return func(ctx context.Context, s *session, args []string) error {
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
			}
		},
	}
}

func uncordonCommand() *command {
	return &command{
		name: "cell uncordon", group: groupOps, args: []string{"CELL_ID"},
		summary:  "Let a cordoned cell take new work again",
		details:  "Lifting the cordon of a cell that has none is not an error; the output says so.",
		examples: []string{"cell uncordon cell-z1-0", "cell uncordon cell-z1-0 --json | jq .was_cordoned"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
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
			}
		},
	}
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
