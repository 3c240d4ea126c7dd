package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"drover.dev/bbs/client"
	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func desiredLRPsCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "desired-lrps [--domain DOMAIN]", GroupID: groupLRPs, Args: exactArgs(),
		Short:   "List desired LRPs",
		Example: examples("desired-lrps", "desired-lrps --domain cf-apps --json"),
	}
	domain := cmd.Flags().String("domain", "", "only LRPs of this `DOMAIN`")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
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
	})
	return cmd
}

func desiredLRPCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "desired-lrp PROCESS_GUID", GroupID: groupLRPs, Args: exactArgs("PROCESS_GUID"),
		Short: "Show one desired LRP and its instances",
		Long: "The table view joins the LRP's definition with its actual instances.\n" +
			"--json prints the definition alone, in the shape 'desire -f' accepts.",
		Example: examples("desired-lrp my-app", "desired-lrp my-app --json | jq .routes"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
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
	})
	return cmd
}

func desireCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "desire -f FILE", GroupID: groupLRPs, Args: exactArgs(),
		Short: "Desire an LRP from its JSON definition",
		Long: "FILE holds a DesiredLRPCreateRequest exactly as the LRP API documents it\n" +
			"(snake_case fields, env as name/value pairs, actions as {\"run\": {...}}).\n" +
			"-f - reads the definition from standard input.",
		Example: examples("desire -f app.json", "desired-lrp my-app --json | jq '.process_guid=\"copy\"' | droverctl desire -f -"),
	}
	return desireFromFile(ctl, cmd, "LRP's JSON definition", jsonapi.DecodeDesiredLRP,
		func(ctx context.Context, c *client.Client, lrp *modelsv1.DesiredLRP) (string, error) {
			if _, err := c.DesireLRP(ctx, &bbsv1.DesireLRPRequest{DesiredLrp: lrp}); err != nil {
				return "", err
			}
			return fmt.Sprintf("desired LRP %s with %s", lrp.GetProcessGuid(), output.Count(int64(lrp.GetInstances()), "instance")), nil
		})
}

// desireFromFile makes cmd a "-f FILE" command: it reads FILE (what describes its
// content; "-" is stdin), decodes it and sends it to the BBS, bounded by --timeout,
// then confirms with what send returns.
func desireFromFile[T any](ctl *cli, cmd *cobra.Command, what string, decode func([]byte) (T, error),
	send func(context.Context, *client.Client, T) (string, error)) *cobra.Command {
	var file string
	fileFlag(cmd, &file, "`FILE` with the "+what+", or - for stdin (required)")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		if file == "" {
			return usagef("%s needs -f FILE", commandName(cmd))
		}
		data, err := readInput(file, s.env.Stdin)
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
	})
	return cmd
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

func scaleCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "scale APP INSTANCES", GroupID: groupLRPs, Args: exactArgs("APP", "INSTANCES"),
		Short:   "Change how many instances of an LRP or app should run",
		Long:    appArgHelp + "\nAn app with two versions (a push or restart replacing one) is refused.",
		Example: examples("scale my-app 5", "scale my-app 0"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		n, err := strconv.ParseInt(args[1], 10, 32)
		if err != nil || n < 0 {
			return usagef("INSTANCES must be a non-negative integer, not %q", args[1])
		}
		instances := int32(n)
		target, err := s.resolveApp(ctx, args[0])
		if err != nil {
			return err
		}
		guid, err := target.single()
		if err != nil {
			return err
		}
		return updateDesiredLRP(ctx, s, guid, &modelsv1.DesiredLRPUpdate{Instances: &instances},
			fmt.Sprintf("scaled %s to %s", target.describe(), output.Count(int64(n), "instance")))
	})
	return cmd
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

func deleteCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "delete APP", GroupID: groupLRPs, Args: exactArgs("APP"),
		Short:   "Remove a desired LRP, or every version of an app, and stop its instances",
		Long:    appArgHelp,
		Example: examples("delete my-app"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		target, err := s.resolveApp(ctx, args[0])
		if err != nil {
			return err
		}
		for _, guid := range target.guids {
			if err := removeDesiredLRP(ctx, s, guid); err != nil {
				return err
			}
			if err := s.confirm("removed desired LRP %s", guid); err != nil {
				return err
			}
		}
		return nil
	})
	return cmd
}

// removeDesiredLRP removes one desired LRP, bounded by --timeout.
func removeDesiredLRP(ctx context.Context, s *session, guid string) error {
	c, callCtx, cancel, err := s.begin(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	_, err = c.RemoveDesiredLRP(callCtx, &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid})
	return err
}
