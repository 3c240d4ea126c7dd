package commands

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
)

// action runs a command with its positional arguments.
type action func(ctx context.Context, s *session, args []string) error

// command is one droverctl subcommand and its documentation.
type command struct {
	// name is one word ("cells") or a family and a verb ("converger pause").
	name  string
	group string
	args  []string // names of the positional arguments, all required
	// flagsUsage shows the command's own flags in the synopsis ("[--domain DOMAIN]").
	flagsUsage string
	summary    string
	// details is free text for "droverctl CMD -h".
	details string
	// examples are command lines shown in help, without "droverctl ".
	examples []string
	// setup defines the command's flags on fs and returns the action reading them.
	setup func(fs *flag.FlagSet) action
}

// Command groups, in help order.
const (
	groupApps    = "Apps"
	groupLRPs    = "Long-running processes"
	groupCluster = "Tasks, cells and cluster state"
	groupEvents  = "Events"
	groupOps     = "Convergence, cordons and evacuation"
)

// commands lists every command in help order.
func commands() []*command {
	return []*command{
		pushCommand(),
		desiredLRPsCommand(), desiredLRPCommand(), desireCommand(), scaleCommand(), deleteCommand(),
		actualLRPsCommand(), killCommand(), logsCommand(), routesCommand(),
		tasksCommand(), taskShowCommand(), taskCancelCommand(), taskDeleteCommand(), taskDesireCommand(),
		cellsCommand(), cellStatesCommand(), domainsCommand(), setDomainCommand(), locksCommand(),
		eventsCommand(),
		convergerStatusCommand(), convergerPauseCommand(), convergerResumeCommand(),
		cordonCommand(), uncordonCommand(), evacuateCommand(),
	}
}

// resolve finds the command named by the first words of args and returns the
// arguments after its name. When args start with a family word ("converger") but
// name none of its commands, family is that word.
func resolve(args []string) (cmd *command, rest []string, family string) {
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return c, args[len(words):], ""
		}
		if len(words) > 1 && len(args) > 0 && args[0] == words[0] {
			family = words[0]
		}
	}
	if family != "" {
		return nil, args[1:], family
	}
	return nil, args, ""
}

// familyCommands lists the commands of a family ("converger") in help order.
func familyCommands(family string) []*command {
	var out []*command
	for _, c := range commands() {
		if strings.HasPrefix(c.name, family+" ") {
			out = append(out, c)
		}
	}
	return out
}

// verbs lists the second words of a family's commands ("status, pause, resume").
func verbs(family string) string {
	var names []string
	for _, c := range familyCommands(family) {
		names = append(names, strings.TrimPrefix(c.name, family+" "))
	}
	return strings.Join(names, ", ")
}

// synopsis is "NAME FLAGS ARGS".
func (c *command) synopsis() string {
	parts := []string{c.name}
	if c.flagsUsage != "" {
		parts = append(parts, c.flagsUsage)
	}
	return strings.Join(append(parts, c.args...), " ")
}

// shortSynopsis is "NAME ARGS" plus required flags, for the overview.
func (c *command) shortSynopsis() string {
	parts := []string{c.name}
	if c.flagsUsage != "" && !strings.HasPrefix(c.flagsUsage, "[") {
		parts = append(parts, c.flagsUsage)
	}
	return strings.Join(append(parts, c.args...), " ")
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
