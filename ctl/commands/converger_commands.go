package commands

import (
	"context"

	"github.com/spf13/cobra"

	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

const convergerStatusDetails = "Shows whether an operator paused the converger's destructive actions (and why,\n" +
	"since when), which converger holds the lock, and the summary of the last pass:\n" +
	"phase durations, what it found (missing, extra, crashed, suspect instances...)\n" +
	"and what became of its conditional writes."

func convergerStatusCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "status", Args: exactArgs(),
		Short:   "Show whether convergence is paused and how the last pass went",
		Long:    convergerStatusDetails,
		Example: examples("converger status", "converger status --json | jq .last_pass.missing"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		st, err := c.GetConvergerStatus(callCtx, &bbsv1.GetConvergerStatusRequest{})
		if err != nil {
			return err
		}
		return printConvergerStatus(s, st)
	})
	return cmd
}

func convergerPauseCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "pause [--reason TEXT]", Args: exactArgs(),
		Short: "Pause the converger's destructive actions (maintenance)",
		Long: "While paused the converger still creates missing instances, restarts crashed ones,\n" +
			"re-auctions stale ones, handles suspects and converges tasks; it only holds back\n" +
			"retiring extra and orphaned instances and removing orphaned suspects. The pause is\n" +
			"stored in the BBS, so it holds for every converger and across restarts, until\n" +
			"'converger resume'. Prints the status after the change.",
		Example: examples(`converger pause --reason "restoring desired state after incident 42"`),
	}
	reason := cmd.Flags().String("reason", "", "why convergence is paused, shown in the status (`TEXT`)")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		return setConvergerPaused(ctx, s, &bbsv1.SetConvergerPausedRequest{Paused: true, Reason: *reason})
	})
	return cmd
}

func convergerResumeCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "resume", Args: exactArgs(),
		Short:   "Resume the converger's destructive actions",
		Long:    "Lifts a 'converger pause'. Prints the status after the change.",
		Example: examples("converger resume"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		return setConvergerPaused(ctx, s, &bbsv1.SetConvergerPausedRequest{})
	})
	return cmd
}

// setConvergerPaused sends req and prints the status the BBS answers with.
func setConvergerPaused(ctx context.Context, s *session, req *bbsv1.SetConvergerPausedRequest) error {
	c, callCtx, cancel, err := s.begin(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	resp, err := c.SetConvergerPaused(callCtx, req)
	if err != nil {
		return err
	}
	return printConvergerStatus(s, resp.GetStatus())
}

// printConvergerStatus renders a property list, or one JSON line.
func printConvergerStatus(s *session, st *bbsv1.GetConvergerStatusResponse) error {
	if s.json() {
		return s.jsonLine(output.ConvergerStatusView(st))
	}
	return s.render(output.ConvergerStatusProperties(st, s.now()))
}
