package commands

import (
	"context"
	"flag"
	"time"

	"drover.dev/bbs/jsonapi"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

func tasksCommand() *command {
	return &command{
		name: "tasks", flagsUsage: "[--domain DOMAIN] [--cell CELL_ID]", group: groupCluster,
		summary:  "List tasks with their state and outcome",
		examples: []string{"tasks", "tasks --domain staging --json", "tasks --cell cell-z1-0"},
		setup: func(fs *flag.FlagSet) action {
			req := &bbsv1.ListTasksRequest{}
			fs.StringVar(&req.Domain, "domain", "", "only tasks of this `DOMAIN`")
			fs.StringVar(&req.CellId, "cell", "", "only tasks on the cell `CELL_ID`")
			return func(ctx context.Context, s *session, _ []string) error {
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
			}
		},
	}
}

func cellsCommand() *command {
	return &command{
		name: "cells", group: groupCluster,
		summary:  "List live cells with their capacity and cordons",
		examples: []string{"cells", "cells --json | jq .capacity", "cells --json | jq 'select(.cordoned) | .cordon_reason'"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, _ []string) error {
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
			}
		},
	}
}

func domainsCommand() *command {
	return &command{
		name: "domains", group: groupCluster,
		summary:  "List fresh domains",
		details:  "The converger removes extra instances only in fresh domains.",
		examples: []string{"domains"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, _ []string) error {
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
			}
		},
	}
}

func setDomainCommand() *command {
	return &command{
		name: "set-domain", flagsUsage: "[--ttl DURATION]", group: groupCluster, args: []string{"DOMAIN"},
		summary: "Mark a domain fresh",
		details: "--ttl takes a duration (90s, 2m, 1h) or a number of seconds; 0 or no --ttl\n" +
			"keeps the domain fresh forever.",
		examples: []string{"set-domain cf-apps --ttl 2m", "set-domain cf-apps --ttl 120", "set-domain cf-tasks"},
		setup: func(fs *flag.FlagSet) action {
			var ttl time.Duration
			fs.Var(&durationValue{d: &ttl}, "ttl", "how long the domain stays fresh: a `DURATION` or seconds (0 = forever)")
			return func(ctx context.Context, s *session, args []string) error {
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
			}
		},
	}
}

func locksCommand() *command {
	return &command{
		name: "locks", group: groupCluster,
		summary:  "List held locks (which auctioneer and converger are active)",
		examples: []string{"locks", "locks --json"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, _ []string) error {
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
			}
		},
	}
}
