package commands

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// cli is one run of droverctl: its global flags, surroundings and, once a command
// runs, the session it used.
type cli struct {
	opts    globalOptions
	env     Env
	stdout  io.Writer
	stderr  io.Writer
	session *session
}

// action runs a command with its positional arguments.
type action func(ctx context.Context, s *session, args []string) error

// Command group IDs; newRoot adds the groups in help order.
const (
	groupApps    = "apps"
	groupLRPs    = "lrps"
	groupCluster = "cluster"
	groupEvents  = "events"
	groupOps     = "ops"
)

const rootLong = `droverctl is the drover operator CLI: it reads and changes BBS state over mutual TLS.

Target:
  Without flags droverctl talks to 127.0.0.1:8889 with the certificates
  .drover/certs/ca.crt, client.crt and client.key, where .drover is $DROVER_HOME/.drover
  (or $DROVER_HOME itself), else the nearest .drover directory from the working
  directory upwards. Flags win over DROVER_BBS_ADDRESS, DROVER_CA_CERT,
  DROVER_CLIENT_CERT and DROVER_CLIENT_KEY, which win over discovery.

Output:
  Aligned tables by default; --json prints one JSON object per line (for jq).
  Errors go to stderr as "droverctl: <type>: <message>".
  Exit status: 0 success, 1 BBS or connection error, 2 usage error.`

// newRoot builds the command tree.
func (c *cli) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "droverctl",
		Short: "The drover operator CLI",
		Long:  rootLong,
		Example: examples(
			"push examples/static-site --name hello",
			"actual-lrps --domain cf-apps",
			"desire -f app.json && droverctl scale my-app 3",
			"events --follow --json | jq .type",
			"cell cordon cell-z1-0 --reason maintenance && droverctl evacuate cell-z1-0 --wait",
		),
		Args: unknownCommand,
		// Without a command: the overview on stderr, and a usage error.
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(c.stderr)
			_ = cmd.Help() // the error, if any, is writing to stderr
			return errHelpShown
		},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	c.opts.register(root.PersistentFlags())
	root.SetFlagErrorFunc(flagError)
	root.AddGroup(
		&cobra.Group{ID: groupApps, Title: "Apps:"},
		&cobra.Group{ID: groupLRPs, Title: "Long-running processes:"},
		&cobra.Group{ID: groupCluster, Title: "Tasks, cells and cluster state:"},
		&cobra.Group{ID: groupEvents, Title: "Events:"},
		&cobra.Group{ID: groupOps, Title: "Convergence, cordons and evacuation:"},
	)
	root.AddCommand(
		pushCommand(c), appsCommand(c), appCommand(c), restartCommand(c), buildpacksCommand(c), buildpackFamily(c),
		desiredLRPsCommand(c), desiredLRPCommand(c), desireCommand(c), scaleCommand(c), deleteCommand(c),
		actualLRPsCommand(c), killCommand(c), logsCommand(c), routesCommand(c),
		execCommand(c), enableSSHCommand(c, true), enableSSHCommand(c, false),
		tasksCommand(c),
		family("task", groupCluster, "Show, cancel, delete or desire one task",
			taskShowCommand(c), taskCancelCommand(c), taskDeleteCommand(c), taskDesireCommand(c)),
		cellsCommand(c), cellStatesCommand(c), domainsCommand(c), setDomainCommand(c), locksCommand(c),
		eventsCommand(c),
		family("converger", groupOps, "Show, pause or resume the converger's destructive actions",
			convergerStatusCommand(c), convergerPauseCommand(c), convergerResumeCommand(c)),
		family("cell", groupOps, "Cordon or uncordon a cell",
			cordonCommand(c), uncordonCommand(c)),
		evacuateCommand(c),
	)
	finish(root)
	// cobra's help and completion commands, with droverctl's usage errors.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd() // after SetOut: the scripts go to c.stdout
	for _, cmd := range root.Commands() {
		switch cmd.Name() {
		case "help":
			cmd.RunE = showHelp // RunE takes precedence over cobra's Run
		case "completion":
			requireSubcommand(cmd, names(cmd.Commands()))
		}
	}
	return root
}

// run adapts an action to cobra: it checks the global flags and opens the session
// the action uses, which Run reports errors with and closes.
func (c *cli) run(act action) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if c.opts.timeout <= 0 {
			return usagef("--timeout must be positive")
		}
		c.session = newSession(&c.opts, c.env, c.stdout, c.stderr)
		return act(cmd.Context(), c.session, args)
	}
}

// finish completes cmd and its subcommands: the help text starts with the summary,
// and shells offer no file names as arguments unless a command completes its own.
func finish(cmd *cobra.Command) {
	if cmd.HasParent() && cmd.Long != "" {
		cmd.Long = cmd.Short + ".\n\n" + cmd.Long
	}
	if cmd.ValidArgsFunction == nil {
		cmd.ValidArgsFunction = cobra.NoFileCompletions
	}
	for _, sub := range cmd.Commands() {
		finish(sub)
	}
}

// family is a command that only groups subcommands ("converger status").
func family(name, group, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: name, GroupID: group, Short: short}
	cmd.AddCommand(subs...)
	requireSubcommand(cmd, names(subs))
	return cmd
}

// requireSubcommand makes a command that groups subcommands a usage error, naming
// verbs, when it is run alone or followed by a word that is none of them.
func requireSubcommand(cmd *cobra.Command, verbs []string) {
	list := strings.Join(verbs, ", ")
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		name := commandName(cmd)
		if len(args) == 0 {
			return usagef("%s needs a command: %s", name, list)
		}
		return usagef("unknown command %q: %s takes %s", name+" "+args[0], name, list)
	}
}

// names lists the names of cmds.
func names(cmds []*cobra.Command) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.Name()
	}
	return out
}

// showHelp serves "droverctl help [COMMAND]"; COMMAND may be two words or a family.
func showHelp(cmd *cobra.Command, args []string) error {
	target, rest, err := cmd.Root().Find(args)
	if err != nil || len(rest) > 0 {
		return usagef("unknown command %q", strings.Join(args, " "))
	}
	target.InitDefaultHelpFlag() // listed as "droverctl COMMAND -h" lists it
	return target.Help()
}

// unknownCommand refuses words after "droverctl" that name no command.
func unknownCommand(_ *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return usagef("unknown command %q", args[0])
}

// exactArgs requires one positional argument per name in want.
func exactArgs(want ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(want) {
			return usagef("%s takes %s", commandName(cmd), argsDescription(want))
		}
		return nil
	}
}

// argsDescription says how many arguments a command takes.
func argsDescription(args []string) string {
	switch len(args) {
	case 0:
		return "no arguments"
	case 1:
		return "1 argument: " + args[0]
	default:
		return fmt.Sprintf("%d arguments: %s", len(args), strings.Join(args, " "))
	}
}

// commandName is a command's path without "droverctl" ("cell cordon"); "" for the
// root and for help.
func commandName(cmd *cobra.Command) string {
	if cmd.Name() == "help" && cmd.Parent() == cmd.Root() {
		return ""
	}
	return strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()), " ")
}

// examples formats command lines, given without "droverctl ", for help.
func examples(lines ...string) string {
	for i, l := range lines {
		lines[i] = "  droverctl " + l
	}
	return strings.Join(lines, "\n")
}
