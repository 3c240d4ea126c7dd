package commands

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drover.dev/ctl/output"
	"drover.dev/ctl/push"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

const buildpacksDetails = "Asks the stager (StagerService, mutual TLS with droverctl's certificate) for the\n" +
	"registered buildpacks: one row per buildpack of each stack, in the order a push\n" +
	"without -b tries them (position 1 first), with the first 12 hex digits of the\n" +
	"archive's sha256, its size and the file name it was uploaded as. With --json, one\n" +
	"line per buildpack. The stager is --stager (env " + EnvStagerAddress + ", default " + DefaultStagerAddress + ")."

// stagerFlag defines --stager on fs.
func stagerFlag(fs *pflag.FlagSet) *string {
	return fs.String("stager", "", "stager gRPC address `HOST:PORT` (env "+EnvStagerAddress+"; default "+DefaultStagerAddress+")")
}

func buildpacksCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "buildpacks [--stack STACK]", GroupID: groupApps, Args: exactArgs(),
		Short:   "List the registered buildpacks by stack and position",
		Long:    buildpacksDetails,
		Example: examples("buildpacks", "buildpacks --stack bookworm --json | jq .name"),
	}
	stack := cmd.Flags().String("stack", "", "only the buildpacks of this `STACK` (default: every stack)")
	stager := stagerFlag(cmd.Flags())
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		resp, err := callStager(ctx, s, s.stagerAddress(*stager), func(ctx context.Context, c stagerv1.StagerServiceClient) (*stagerv1.ListBuildpacksResponse, error) {
			return c.ListBuildpacks(ctx, &stagerv1.ListBuildpacksRequest{Stack: *stack})
		})
		if err != nil {
			return err
		}
		return printList(s, output.BuildpackTable(resp.GetBuildpacks()), resp.GetBuildpacks(), infallible(output.BuildpackView))
	})
	return cmd
}

// buildpackFamily is "buildpack create|update|delete".
func buildpackFamily(ctl *cli) *cobra.Command {
	return family("buildpack", groupApps, "Create, update or delete a registered buildpack",
		buildpackCreateCommand(ctl), buildpackUpdateCommand(ctl), buildpackDeleteCommand(ctl))
}

// buildpackFlags are the flags the buildpack commands share.
type buildpackFlags struct {
	stack    *string
	position *int
	stager   *string
}

func addBuildpackFlags(cmd *cobra.Command, withPosition bool, positionUsage string) buildpackFlags {
	f := buildpackFlags{
		stack:  cmd.Flags().String("stack", defaultBuildpackStack, "the buildpack's `STACK`"),
		stager: stagerFlag(cmd.Flags()),
	}
	if withPosition {
		f.position = cmd.Flags().Int("position", 0, positionUsage)
	}
	return f
}

// check refuses a bad buildpack NAME and a negative --position.
func (f buildpackFlags) check(name string) error {
	if err := push.CheckBuildpackName(name); err != nil {
		return usagef("%v", err)
	}
	if f.position != nil && (*f.position < 0 || *f.position > 1<<31-1) {
		return usagef("--position must be a non-negative integer, not %d", *f.position)
	}
	return nil
}

// completeBuildpackPath offers files and directories for PATH (after NAME).
func completeBuildpackPath(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 1 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

func buildpackCreateCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "create NAME PATH [--stack STACK] [--position N]", Args: exactArgs("NAME", "PATH"),
		Short: "Register a buildpack archive or directory for a stack",
		Long: "PATH is a buildpack archive (.zip, .tgz or .tar.gz) with bin/detect and bin/compile\n" +
			"(or bin/supply and/or bin/finalize), or a directory, which is packed as a tar.gz\n" +
			"with its files' modes. The stager checks and stores it and inserts it into the\n" +
			"stack's list at --position (1 first; default: last); the buildpacks after it move\n" +
			"down. Prints the registered buildpack.",
		Example:           examples("buildpack create nodejs buildpacks/nodejs", "buildpack create mine ./mine.zip --position 1"),
		ValidArgsFunction: completeBuildpackPath,
	}
	f := addBuildpackFlags(cmd, true, "1-based `N` in the stack's list (default: last)")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		if err := f.check(args[0]); err != nil {
			return err
		}
		archive, filename, err := buildpackArchive(args[1])
		if err != nil {
			return err
		}
		resp, err := callStager(ctx, s, s.stagerAddress(*f.stager), func(ctx context.Context, c stagerv1.StagerServiceClient) (*stagerv1.CreateBuildpackResponse, error) {
			return c.CreateBuildpack(ctx, &stagerv1.CreateBuildpackRequest{
				Name: args[0], Stack: *f.stack, Position: int32(*f.position), Archive: archive, Filename: filename,
			})
		})
		if err != nil {
			return err
		}
		return printBuildpack(s, resp.GetBuildpack())
	})
	return cmd
}

func buildpackUpdateCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "update NAME [--stack STACK] [--position N] [--path PATH]", Args: exactArgs("NAME"),
		Short: "Move a buildpack in its stack's list and/or replace its archive",
		Long: "--position moves the buildpack (1 first); --path replaces its archive with another\n" +
			"archive or directory, as for create. At least one of them is needed. Prints the\n" +
			"buildpack as it is now.",
		Example: examples("buildpack update nodejs --position 1", "buildpack update go --path buildpacks/go"),
	}
	f := addBuildpackFlags(cmd, true, "move to 1-based position `N`")
	path := cmd.Flags().String("path", "", "replace the archive with this archive or directory `PATH`")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		if err := f.check(args[0]); err != nil {
			return err
		}
		if *f.position == 0 && *path == "" {
			return usagef("buildpack update needs --position N or --path PATH")
		}
		req := &stagerv1.UpdateBuildpackRequest{Name: args[0], Stack: *f.stack, Position: int32(*f.position)}
		if *path != "" {
			var err error
			if req.Archive, req.Filename, err = buildpackArchive(*path); err != nil {
				return err
			}
		}
		resp, err := callStager(ctx, s, s.stagerAddress(*f.stager), func(ctx context.Context, c stagerv1.StagerServiceClient) (*stagerv1.UpdateBuildpackResponse, error) {
			return c.UpdateBuildpack(ctx, req)
		})
		if err != nil {
			return err
		}
		return printBuildpack(s, resp.GetBuildpack())
	})
	_ = cmd.MarkFlagFilename("path") // the flag exists: no error
	return cmd
}

func buildpackDeleteCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "delete NAME [--stack STACK]", Args: exactArgs("NAME"),
		Short:   "Remove a buildpack from its stack's list",
		Long:    "The buildpacks after it move up. Pushes that name it with -b fail from then on.",
		Example: examples("buildpack delete mine", "buildpack delete busybox --stack busybox"),
	}
	f := addBuildpackFlags(cmd, false, "")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		if err := f.check(args[0]); err != nil {
			return err
		}
		if _, err := callStager(ctx, s, s.stagerAddress(*f.stager), func(ctx context.Context, c stagerv1.StagerServiceClient) (*stagerv1.DeleteBuildpackResponse, error) {
			return c.DeleteBuildpack(ctx, &stagerv1.DeleteBuildpackRequest{Name: args[0], Stack: *f.stack})
		}); err != nil {
			return err
		}
		return s.confirm("deleted buildpack %s of stack %s", args[0], *f.stack)
	})
	return cmd
}

// printBuildpack shows one buildpack: properties, or a JSON line.
func printBuildpack(s *session, b *stagerv1.Buildpack) error {
	if s.json() {
		return s.jsonLine(output.BuildpackView(b))
	}
	return s.render(output.BuildpackProperties(b))
}
