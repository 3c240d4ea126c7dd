package commands

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"drover.dev/bbs/jsonapi"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

func tasksCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "tasks [--domain DOMAIN] [--cell CELL_ID]", GroupID: groupCluster, Args: exactArgs(),
		Short:   "List tasks with their state and outcome",
		Example: examples("tasks", "tasks --domain staging --json", "tasks --cell cell-z1-0"),
	}
	req := &bbsv1.ListTasksRequest{}
	cmd.Flags().StringVar(&req.Domain, "domain", "", "only tasks of this `DOMAIN`")
	cmd.Flags().StringVar(&req.CellId, "cell", "", "only tasks on the cell `CELL_ID`")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		resp, err := c.ListTasks(callCtx, req)
		if err != nil {
			return err
		}
		return printList(s, output.TaskTable(resp.GetTasks(), s.now()), resp.GetTasks(), fallible(jsonapi.TaskView))
	})
	return cmd
}

func cellsCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cells", GroupID: groupCluster, Args: exactArgs(),
		Short:   "List live cells with their capacity and cordons",
		Example: examples("cells", "cells --json | jq .capacity", "cells --json | jq 'select(.cordoned) | .cordon_reason'"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		resp, err := c.ListCells(callCtx, &bbsv1.ListCellsRequest{})
		if err != nil {
			return err
		}
		return printList(s, output.CellTable(resp.GetCells(), s.now()), resp.GetCells(), infallible(output.CellView))
	})
	return cmd
}

func domainsCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "domains", GroupID: groupCluster, Args: exactArgs(),
		Short:   "List fresh domains",
		Long:    "The converger removes extra instances only in fresh domains.",
		Example: examples("domains"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		resp, err := c.ListDomains(callCtx, &bbsv1.ListDomainsRequest{})
		if err != nil {
			return err
		}
		return printList(s, output.DomainTable(resp.GetDomains()), resp.GetDomains(), infallible(output.DomainView))
	})
	return cmd
}

func setDomainCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "set-domain [--ttl DURATION] DOMAIN", GroupID: groupCluster, Args: exactArgs("DOMAIN"),
		Short: "Mark a domain fresh",
		Long: "--ttl takes a duration (90s, 2m, 1h) or a number of seconds; 0 or no --ttl\n" +
			"keeps the domain fresh forever.",
		Example: examples("set-domain cf-apps --ttl 2m", "set-domain cf-apps --ttl 120", "set-domain cf-tasks"),
	}
	var ttl time.Duration
	cmd.Flags().Var(&durationValue{d: &ttl}, "ttl", "how long the domain stays fresh: a `DURATION` or seconds (0 = forever)")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		seconds, err := TTLSeconds(ttl)
		if err != nil {
			return usagef("%v", err)
		}
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		if _, err := c.UpsertDomain(callCtx, &bbsv1.UpsertDomainRequest{Domain: args[0], TtlSeconds: seconds}); err != nil {
			return err
		}
		if seconds == 0 {
			return s.confirm("domain %s is fresh forever", args[0])
		}
		return s.confirm("domain %s is fresh for %s", args[0], ttl)
	})
	return cmd
}

func locksCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "locks", GroupID: groupCluster, Args: exactArgs(),
		Short:   "List held locks (which auctioneer and converger are active)",
		Example: examples("locks", "locks --json"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		resp, err := c.ListLocks(callCtx, &bbsv1.ListLocksRequest{})
		if err != nil {
			return err
		}
		return printList(s, output.LockTable(resp.GetLocks(), s.now()), resp.GetLocks(), infallible(output.LockView))
	})
	return cmd
}
