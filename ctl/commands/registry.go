package commands

import (
	"context"
	"flag"
	"fmt"
	"strings"
)

// action runs a command with its positional arguments.
type action func(ctx context.Context, s *session, args []string) error

// command is one droverctl subcommand and its documentation.
type command struct {
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
	groupLRPs    = "Long-running processes"
	groupCluster = "Tasks, cells and cluster state"
	groupEvents  = "Events"
)

// commands lists every command in help order.
func commands() []*command {
	return []*command{
		desiredLRPsCommand(), desiredLRPCommand(), desireCommand(), scaleCommand(), deleteCommand(),
		actualLRPsCommand(), killCommand(), logsCommand(),
		tasksCommand(), cellsCommand(), cellStatesCommand(), domainsCommand(), setDomainCommand(), locksCommand(),
		eventsCommand(),
	}
}

// lookup finds a command by name.
func lookup(name string) (*command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return nil, false
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
