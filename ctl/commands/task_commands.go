package commands

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

func taskShowCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "show TASK_GUID", Args: exactArgs("TASK_GUID"),
		Short:   "Show one task: state, cell, failure and result",
		Long:    "--json prints the task with its definition.",
		Example: examples("task show staging-1a2b3c4d-0f9e8d", "task show my-task --json | jq -r .result"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		resp, err := s.getTask(ctx, args[0])
		if err != nil {
			return err
		}
		if s.json() {
			view, err := jsonapi.TaskView(resp.GetTask())
			if err != nil {
				return err
			}
			return s.jsonLine(view)
		}
		return s.render(output.TaskProperties(resp.GetTask(), s.now()))
	})
	return cmd
}

func taskCancelCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cancel TASK_GUID", Args: exactArgs("TASK_GUID"),
		Short: "Cancel a pending or running task",
		Long: "The task completes as failed (\"task was cancelled\") and its container is\n" +
			"stopped; 'task delete' then removes it.",
		Example: examples("task cancel my-task && droverctl task delete my-task"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		if _, err := c.CancelTask(callCtx, &bbsv1.CancelTaskRequest{TaskGuid: args[0]}); err != nil {
			return err
		}
		return s.confirm("cancelled task %s", args[0])
	})
	return cmd
}

func taskDeleteCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "delete TASK_GUID", Args: exactArgs("TASK_GUID"),
		Short: "Resolve and delete a completed task",
		Long: "A COMPLETED task is marked RESOLVING, then deleted (what a task's owner does\n" +
			"after reading its result). A PENDING or RUNNING task is refused: cancel it first.",
		Example: examples("task delete my-task"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		guid := args[0]
		resp, err := s.getTask(ctx, guid)
		if err != nil {
			return err
		}
		state := resp.GetTask().GetState()
		if models.TaskCanBeCancelled(state) {
			return models.NewError(models.ErrTypeInvalidStateTransition, "task %s is %s: cancel it first", guid, models.TaskStateName(state))
		}
		c, callCtx, cancel, err := s.begin(ctx)
		defer cancel()
		if err != nil {
			return err
		}
		if !models.TaskCanBeDeleted(state) {
			if _, err := c.ResolvingTask(callCtx, &bbsv1.ResolvingTaskRequest{TaskGuid: guid}); err != nil {
				return err
			}
		}
		if _, err := c.DeleteTask(callCtx, &bbsv1.DeleteTaskRequest{TaskGuid: guid}); err != nil {
			return err
		}
		return s.confirm("deleted task %s", guid)
	})
	return cmd
}

func taskDesireCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "desire -f FILE", Args: exactArgs(),
		Short: "Desire a task from its JSON definition",
		Long: "FILE holds a DesireTaskRequest: {\"task_guid\", \"domain\", \"task_definition\": {...}}\n" +
			"with snake_case fields and actions as {\"run\": {...}}, as 'desire -f' takes LRPs.\n" +
			"-f - reads the request from standard input.",
		Example: examples("task desire -f task.json", "task show my-task --json | jq '{task_guid: \"again\", domain, task_definition}' | droverctl task desire -f -"),
	}
	return desireFromFile(ctl, cmd, "task's JSON request", jsonapi.DecodeDesireTask,
		func(ctx context.Context, c *client.Client, req *bbsv1.DesireTaskRequest) (string, error) {
			if _, err := c.DesireTask(ctx, req); err != nil {
				return "", err
			}
			return fmt.Sprintf("desired task %s in domain %s", req.GetTaskGuid(), req.GetDomain()), nil
		})
}
