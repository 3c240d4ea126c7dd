package commands

import (
	"context"
	"flag"
	"fmt"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

func taskShowCommand() *command {
	return &command{
		name: "task show", group: groupCluster, args: []string{"TASK_GUID"},
		summary:  "Show one task: state, cell, failure and result",
		details:  "--json prints the task with its definition.",
		examples: []string{"task show staging-1a2b3c4d-0f9e8d", "task show my-task --json | jq -r .result"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
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
			}
		},
	}
}

func taskCancelCommand() *command {
	return &command{
		name: "task cancel", group: groupCluster, args: []string{"TASK_GUID"},
		summary: "Cancel a pending or running task",
		details: "The task completes as failed (\"task was cancelled\") and its container is\n" +
			"stopped; 'task delete' then removes it.",
		examples: []string{"task cancel my-task && droverctl task delete my-task"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
				c, callCtx, cancel, err := s.begin(ctx)
				defer cancel()
				if err != nil {
					return err
				}
				if _, err := c.CancelTask(callCtx, &bbsv1.CancelTaskRequest{TaskGuid: args[0]}); err != nil {
					return err
				}
				return s.confirm("cancelled task %s", args[0])
			}
		},
	}
}

func taskDeleteCommand() *command {
	return &command{
		name: "task delete", group: groupCluster, args: []string{"TASK_GUID"},
		summary: "Resolve and delete a completed task",
		details: "A COMPLETED task is marked RESOLVING, then deleted (what a task's owner does\n" +
			"after reading its result). A PENDING or RUNNING task is refused: cancel it first.",
		examples: []string{"task delete my-task"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
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
			}
		},
	}
}

func taskDesireCommand() *command {
	return &command{
		name: "task desire", flagsUsage: "-f FILE", group: groupCluster,
		summary: "Desire a task from its JSON definition",
		details: "FILE holds a DesireTaskRequest: {\"task_guid\", \"domain\", \"task_definition\": {...}}\n" +
			"with snake_case fields and actions as {\"run\": {...}}, as 'desire -f' takes LRPs.\n" +
			"-f - reads the request from standard input.",
		examples: []string{"task desire -f task.json", "task show my-task --json | jq '{task_guid: \"again\", domain, task_definition}' | droverctl task desire -f -"},
		setup: desireFromFile("task desire", "task's JSON request", jsonapi.DecodeDesireTask,
			func(ctx context.Context, c *client.Client, req *bbsv1.DesireTaskRequest) (string, error) {
				if _, err := c.DesireTask(ctx, req); err != nil {
					return "", err
				}
				return fmt.Sprintf("desired task %s in domain %s", req.GetTaskGuid(), req.GetDomain()), nil
			}),
	}
}
