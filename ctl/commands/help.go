package commands

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

const mainIntro = `droverctl is the drover operator CLI: it reads and changes BBS state over mutual TLS.

Usage:
  droverctl [global flags] COMMAND [flags] [args]
`

const mainFooter = `Target:
  Without flags droverctl talks to 127.0.0.1:8889 with the certificates
  .drover/certs/ca.crt, client.crt and client.key, where .drover is $DROVER_HOME/.drover
  (or $DROVER_HOME itself), else the nearest .drover directory from the working
  directory upwards. Flags win over DROVER_BBS_ADDRESS, DROVER_CA_CERT,
  DROVER_CLIENT_CERT and DROVER_CLIENT_KEY, which win over discovery.

Output:
  Aligned tables by default; --json prints one JSON object per line (for jq).
  Errors go to stderr as "droverctl: <type>: <message>".
  Exit status: 0 success, 1 BBS or connection error, 2 usage error.

Examples:
  droverctl push examples/static-site --name hello
  droverctl actual-lrps --domain cf-apps
  droverctl desire -f app.json && droverctl scale my-app 3
  droverctl events --follow --json | jq .type
  droverctl cell cordon cell-z1-0 --reason maintenance && droverctl evacuate cell-z1-0 --wait

Run 'droverctl COMMAND -h' for a command's flags and examples.
`

// printMainHelp writes the overview: commands by group and global flags.
func printMainHelp(w io.Writer) {
	fmt.Fprint(w, mainIntro)
	printCommandList(w, commands(), true)
	fmt.Fprint(w, "\nGlobal flags (before or after the command):\n")
	printFlags(w, globalFlagSet())
	fmt.Fprint(w, "\n"+mainFooter)
}

// printCommandList writes one aligned "synopsis  summary" line per command, under
// group headings when grouped.
func printCommandList(w io.Writer, cmds []*command, grouped bool) {
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.shortSynopsis()))
	}
	group := ""
	for _, c := range cmds {
		if grouped && c.group != group {
			group = c.group
			fmt.Fprintf(w, "\n%s:\n", group)
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.shortSynopsis(), c.summary)
	}
}

// printFamilyHelp lists the commands of a family ("converger").
func printFamilyHelp(w io.Writer, family string) {
	fmt.Fprintf(w, "Usage: droverctl %s COMMAND [flags] [args]\n\nCommands:\n", family)
	printCommandList(w, familyCommands(family), false)
	fmt.Fprintf(w, "\nRun 'droverctl %s COMMAND -h' for a command's flags and examples.\n", family)
}

// runFamily serves a family word not followed by one of its commands: help for -h,
// else a usage error listing the family's commands.
func runFamily(stdout, stderr io.Writer, family string, args []string) int {
	switch {
	case len(args) == 0:
		return reportUsage(stderr, family, fmt.Sprintf("%s needs a command: %s", family, verbs(family)))
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
		printFamilyHelp(stdout, family)
		return ExitOK
	default:
		return reportUsage(stderr, family, fmt.Sprintf("unknown command %q: %s takes %s", family+" "+args[0], family, verbs(family)))
	}
}

// printCommandHelp writes one command's usage, details, flags and examples.
func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: droverctl %s\n\n%s.\n", c.synopsis(), c.summary)
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.details))
	}
	fs := newFlagSet(c.name)
	c.setup(fs)
	if hasFlags(fs) {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, fs)
	}
	if len(c.examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, ex := range c.examples {
			fmt.Fprintf(w, "  droverctl %s\n", ex)
		}
	}
	fmt.Fprint(w, "\nGlobal flags such as --json, --timeout and --bbs-address: see 'droverctl help'.\n")
}

// runHelp serves "droverctl help [COMMAND]"; COMMAND may be two words or a family.
func runHelp(stdout, stderr io.Writer, args []string) int {
	if len(args) == 0 {
		printMainHelp(stdout)
		return ExitOK
	}
	c, rest, family := resolve(args)
	switch {
	case c != nil && len(rest) == 0:
		printCommandHelp(stdout, c)
	case family != "" && len(rest) == 0:
		printFamilyHelp(stdout, family)
	default:
		return reportUsage(stderr, "", fmt.Sprintf("unknown command %q", strings.Join(args, " ")))
	}
	return ExitOK
}

// globalFlagSet holds only the global flags, with their real defaults.
func globalFlagSet() *flag.FlagSet {
	fs := newFlagSet("droverctl")
	(&globalOptions{timeout: DefaultTimeout}).register(fs)
	return fs
}

// printFlags writes one "  --name TYPE  usage (default x)" line per flag of fs.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		typeName, usage := flag.UnquoteUsage(f)
		left := "--" + f.Name
		if typeName != "" {
			left += " " + typeName
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", left, usage)
	})
	_ = tw.Flush()
}

// hasFlags reports whether fs defines any flag.
func hasFlags(fs *flag.FlagSet) bool {
	found := false
	fs.VisitAll(func(*flag.Flag) { found = true })
	return found
}
