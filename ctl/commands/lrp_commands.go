package commands

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func desiredLRPsCommand() *command {
	return &command{
		name: "desired-lrps", flagsUsage: "[--domain DOMAIN]", group: groupLRPs,
		summary:  "List desired LRPs",
		examples: []string{"desired-lrps", "desired-lrps --domain cf-apps --json"},
		setup: func(fs *flag.FlagSet) action {
			domain := fs.String("domain", "", "only LRPs of this `DOMAIN`")
			return func(ctx context.Context, s *session, _ []string) error {
				c, callCtx, cancel, err := s.begin(ctx)
				defer cancel()
				if err != nil {
					return err
				}
				resp, err := c.ListDesiredLRPs(callCtx, &bbsv1.ListDesiredLRPsRequest{Domain: *domain})
				if err != nil {
					return err
				}
				lrps := resp.GetDesiredLrps()
				return printList(s, output.DesiredLRPTable(lrps, s.now()), lrps, fallible(jsonapi.EncodeDesiredLRP))
			}
		},
	}
}

func desiredLRPCommand() *command {
	return &command{
		name: "desired-lrp", group: groupLRPs, args: []string{"PROCESS_GUID"},
		summary: "Show one desired LRP and its instances",
		details: "The table view joins the LRP's definition with its actual instances.\n" +
			"--json prints the definition alone, in the shape 'desire -f' accepts.",
		examples: []string{"desired-lrp my-app", "desired-lrp my-app --json | jq .routes"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
				c, callCtx, cancel, err := s.begin(ctx)
				defer cancel()
				if err != nil {
					return err
				}
				resp, err := c.GetDesiredLRP(callCtx, &bbsv1.GetDesiredLRPRequest{ProcessGuid: args[0]})
				if err != nil {
					return err
				}
				if s.json() {
					raw, err := jsonapi.EncodeDesiredLRP(resp.GetDesiredLrp())
					if err != nil {
						return err
					}
					return s.jsonLine(raw)
				}
				instances, err := listActualLRPs(ctx, s, &bbsv1.ListActualLRPsRequest{ProcessGuid: args[0]})
				if err != nil {
					return err
				}
				if err := s.render(output.DesiredLRPProperties(resp.GetDesiredLrp(), s.now())); err != nil {
					return err
				}
				fmt.Fprintln(s.stdout)
				return s.render(output.ActualLRPTable(instances, s.now()))
			}
		},
	}
}

func desireCommand() *command {
	return &command{
		name: "desire", flagsUsage: "-f FILE", group: groupLRPs,
		summary: "Desire an LRP from its JSON definition",
		details: "FILE holds a DesiredLRPCreateRequest exactly as the LRP API documents it\n" +
			"(snake_case fields, env as name/value pairs, actions as {\"run\": {...}}).\n" +
			"-f - reads the definition from standard input.",
		examples: []string{"desire -f app.json", "desired-lrp my-app --json | jq '.process_guid=\"copy\"' | droverctl desire -f -"},
		setup: desireFromFile("desire", "LRP's JSON definition", jsonapi.DecodeDesiredLRP,
			func(ctx context.Context, c *client.Client, lrp *modelsv1.DesiredLRP) (string, error) {
				if _, err := c.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrp}); err != nil {
					return "", err
				}
				return fmt.Sprintf("desired LRP %s with %d instances", lrp.GetProcessGuid(), lrp.GetInstances()), nil
			}),
	}
}

// desireFromFile is the setup of a "-f FILE" command (name): it reads FILE (what
// describes its content; "-" is stdin), decodes it and sends it to the BBS, bounded by
// --timeout, then confirms with what send returns.
func desireFromFile[T any](name, what string, decode func([]byte) (T, error),
	send func(context.Context, *client.Client, T) (string, error)) func(*flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		file := fs.String("f", "", "`FILE` with the "+what+", or - for stdin (required)")
		return func(ctx context.Context, s *session, _ []string) error {
			if *file == "" {
				return usagef("%s needs -f FILE", name)
			}
			data, err := readInput(*file, s.env.Stdin)
			if err != nil {
				return err
			}
			req, err := decode(data)
			if err != nil {
				return err
			}
			c, callCtx, cancel, err := s.begin(ctx)
			defer cancel()
			if err != nil {
				return err
			}
			done, err := send(callCtx, c, req)
			if err != nil {
				return err
			}
			return s.confirm("%s", done)
		}
	}
}

// readInput reads a file, or stdin for "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	if name == "-" {
		if stdin == nil {
			return nil, models.NewError(models.ErrTypeInvalidRequest, "no standard input to read")
		}
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, models.NewError(models.ErrTypeInvalidRequest, "reading %s: %v", name, err)
	}
	return data, nil
}

func scaleCommand() *command {
	return &command{
		name: "scale", group: groupLRPs, args: []string{"PROCESS_GUID", "INSTANCES"},
		summary:  "Change how many instances of an LRP should run",
		examples: []string{"scale my-app 5", "scale my-app 0"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
				n, err := strconv.ParseInt(args[1], 10, 32)
				if err != nil || n < 0 {
					return usagef("INSTANCES must be a non-negative integer, not %q", args[1])
				}
				instances := int32(n)
				return updateDesiredLRP(ctx, s, args[0], &modelsv1.DesiredLRPUpdate{Instances: &instances},
					fmt.Sprintf("scaled %s to %d instances", args[0], n))
			}
		},
	}
}

// updateDesiredLRP sends an update and confirms it with done.
func updateDesiredLRP(ctx context.Context, s *session, guid string, update *modelsv1.DesiredLRPUpdate, done string) error {
	c, callCtx, cancel, err := s.begin(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	if _, err := c.UpdateDesiredLRP(callCtx, &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: update}); err != nil {
		return err
	}
	return s.confirm("%s", done)
}

func deleteCommand() *command {
	return &command{
		name: "delete", group: groupLRPs, args: []string{"PROCESS_GUID"},
		summary:  "Remove a desired LRP and stop its instances",
		examples: []string{"delete my-app"},
		setup: func(*flag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
				c, callCtx, cancel, err := s.begin(ctx)
				defer cancel()
				if err != nil {
					return err
				}
				if _, err := c.RemoveDesiredLRP(callCtx, &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: args[0]}); err != nil {
					return err
				}
				return s.confirm("removed desired LRP %s", args[0])
			}
		},
	}
}
