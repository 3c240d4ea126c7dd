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
  droverctl actual-lrps --domain cf-apps
  droverctl desire -f app.json && droverctl scale my-app 3
  droverctl events --follow --json | jq .type

Run 'droverctl COMMAND -h' for a command's flags and examples.
`

// printMainHelp writes the overview: commands by group and global flags.
func printMainHelp(w io.Writer) {
	fmt.Fprint(w, mainIntro)
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.shortSynopsis()))
	}
	group := ""
	for _, c := range commands() {
		if c.group != group {
			group = c.group
			fmt.Fprintf(w, "\n%s:\n", group)
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.shortSynopsis(), c.summary)
	}
	fmt.Fprint(w, "\nGlobal flags (before or after the command):\n")
	printFlags(w, globalFlagSet())
	fmt.Fprint(w, "\n"+mainFooter)
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

// runHelp serves "droverctl help [COMMAND]".
func runHelp(stdout, stderr io.Writer, args []string) int {
	switch len(args) {
	case 0:
		printMainHelp(stdout)
		return ExitOK
	case 1:
		c, ok := lookup(args[0])
		if !ok {
			return reportUsage(stderr, "", fmt.Sprintf("unknown command %q", args[0]))
		}
		printCommandHelp(stdout, c)
		return ExitOK
	default:
		return reportUsage(stderr, "", "help takes at most one command name")
	}
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
