package commands

import (
	"context"
	"math"
	"strconv"

	"github.com/spf13/cobra"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func actualLRPsCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "actual-lrps [--domain DOMAIN] [--cell CELL_ID] [--guid PROCESS_GUID] [--index INDEX]", GroupID: groupLRPs, Args: exactArgs(),
		Short: "List LRP instances: state, cell, address and placement errors",
		Long: "Filters are combined; evacuating and suspect copies of an index are listed too,\n" +
			"with their presence after the state.",
		Example: examples(
			"actual-lrps",
			"actual-lrps --guid my-app",
			"actual-lrps --cell cell-z1-0 --json | jq -r .process_guid",
		),
	}
	req := &bbsv1.ListActualLRPsRequest{}
	cmd.Flags().StringVar(&req.Domain, "domain", "", "only instances of this `DOMAIN`")
	cmd.Flags().StringVar(&req.CellId, "cell", "", "only instances on the cell `CELL_ID`")
	cmd.Flags().StringVar(&req.ProcessGuid, "guid", "", "only instances of the LRP `PROCESS_GUID`")
	index := &uint64Value{}
	cmd.Flags().Var(index, "index", "only instances with this `INDEX`")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		if index.set {
			if index.n > math.MaxInt32 {
				return usagef("--index %d is too large", index.n)
			}
			i := int32(index.n)
			req.Index = &i
		}
		lrps, err := listActualLRPs(ctx, s, req)
		if err != nil {
			return err
		}
		return printList(s, output.ActualLRPTable(lrps, s.now()), lrps, infallible(jsonapi.ActualLRPView))
	})
	return cmd
}

// listActualLRPs collects every batch of the stream, sorted for display.
func listActualLRPs(ctx context.Context, s *session, req *bbsv1.ListActualLRPsRequest) ([]*modelsv1.ActualLRP, error) {
	c, callCtx, cancel, err := s.begin(ctx)
	defer cancel()
	if err != nil {
		return nil, err
	}
	lrps, err := client.AllActualLRPs(callCtx, c, req)
	if err != nil {
		return nil, err
	}
	output.SortActualLRPs(lrps)
	return lrps, nil
}

func killCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "kill PROCESS_GUID INDEX", GroupID: groupLRPs, Args: exactArgs("PROCESS_GUID", "INDEX"),
		Short: "Stop one LRP instance (the converger starts a replacement)",
		Long: "An unplaced instance is deleted at once; a placed one is stopped by its cell's rep.\n" +
			"Unless the LRP was scaled down, the converger then starts the index again.",
		Example: examples("kill my-app 2"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		index, err := strconv.ParseInt(args[1], 10, 32)
		if err != nil || index < 0 {
			return usagef("INDEX must be a non-negative integer, not %q", args[1])
		}
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		key := &modelsv1.ActualLRPKey{ProcessGuid: args[0], Index: int32(index)}
		if _, err := c.RetireActualLRP(callCtx, &bbsv1.RetireActualLRPRequest{ActualLrpKey: key}); err != nil {
			return err
		}
		return s.confirm("retired instance %s/%d", args[0], index)
	})
	return cmd
}
