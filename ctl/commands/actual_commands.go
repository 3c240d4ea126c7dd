package commands

import (
	"context"
	"flag"
	"math"
	"strconv"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func actualLRPsCommand() *command {
	return &command{
		name: "actual-lrps", flagsUsage: "[--domain DOMAIN] [--cell CELL_ID] [--guid PROCESS_GUID] [--index INDEX]", group: groupLRPs,
		summary: "List LRP instances: state, cell, address and placement errors",
		details: "Filters are combined; evacuating and suspect copies of an index are listed too,\n" +
			"with their presence after the state.",
		examples: []string{
			"actual-lrps",
			"actual-lrps --guid my-app",
			"actual-lrps --cell cell-z1-0 --json | jq -r .process_guid",
		},
		setup: func(fs *flag.FlagSet) action {
			req := &bbsv1.ListActualLRPsRequest{}
			fs.StringVar(&req.Domain, "domain", "", "only instances of this `DOMAIN`")
			fs.StringVar(&req.CellId, "cell", "", "only instances on the cell `CELL_ID`")
			fs.StringVar(&req.ProcessGuid, "guid", "", "only instances of the LRP `PROCESS_GUID`")
			index := &uint64Value{}
			fs.Var(index, "index", "only instances with this `INDEX`")
			return func(ctx context.Context, s *session, _ []string) error {
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
			}
		},
	}
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

func killCommand() *command {
	return &command{
		name: "kill", group: groupLRPs, args: []string{"PROCESS_GUID", "INDEX"},
		summary: "Stop one LRP instance (the converger starts a replacement)",
		details: "An unplaced instance is deleted at once; a placed one is stopped by its cell's rep.\n" +
			"Unless the LRP was scaled down, the converger then starts the index again.",
		examples: []string{"kill my-app 2"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
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
			}
		},
	}
}
