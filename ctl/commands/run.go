// Package commands is droverctl: it parses a command line, talks to the BBS over
// mutual TLS and prints tables or JSON lines. Run is the whole program, so tests can
// drive it with their own arguments, streams and environment.
package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
)

// Exit statuses.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// ErrTypeInvalidTarget is the error type of a BBS target droverctl cannot use
// (no .drover directory, unreadable certificates).
const ErrTypeInvalidTarget models.ErrorType = "InvalidTarget"

// Env is what droverctl takes from its surroundings.
type Env struct {
	// Vars are the environment variables (DROVER_*).
	Vars map[string]string
	// WorkDir is where the search for .drover starts.
	WorkDir string
	// Stdin is read by "desire -f -".
	Stdin io.Reader
	// Now is the clock for ages in tables; nil means time.Now.
	Now func() time.Time
	// PollInterval is how often waiting commands (evacuate --wait) ask the BBS;
	// zero means every 2 seconds.
	PollInterval time.Duration
}

// OSEnv is the Env of the running process.
func OSEnv() Env {
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	wd, _ := os.Getwd() // an unknown working directory only disables discovery
	return Env{Vars: vars, WorkDir: wd, Stdin: os.Stdin, Now: time.Now}
}

// Run runs droverctl with args (without the program name) and returns the exit
// status: 0 on success, 1 when the BBS or the connection fails, 2 on usage errors,
// 130 when ctx is cancelled (interrupted) during a call. Nil writers discard output.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, env Env) int {
	stdout, stderr = orDiscard(stdout), orDiscard(stderr)
	opts := &globalOptions{timeout: DefaultTimeout}
	global := newFlagSet("droverctl")
	opts.register(global)
	if err := global.Parse(args); err != nil {
		return reportParseError(stdout, stderr, err, "", printMainHelp)
	}
	rest := global.Args()
	if len(rest) == 0 {
		printMainHelp(stderr)
		return ExitUsage
	}
	if rest[0] == "help" {
		return runHelp(stdout, stderr, rest[1:])
	}
	cmd, rest, family := resolve(rest)
	if family != "" {
		return runFamily(stdout, stderr, family, rest)
	}
	if cmd == nil {
		return reportUsage(stderr, "", fmt.Sprintf("unknown command %q", rest[0]))
	}
	name := cmd.name
	fs := newFlagSet(name)
	opts.register(fs)
	act := cmd.setup(fs)
	positional, err := parseInterspersed(fs, rest)
	if err != nil {
		return reportParseError(stdout, stderr, err, name, func(w io.Writer) { printCommandHelp(w, cmd) })
	}
	if len(positional) != len(cmd.args) {
		return reportUsage(stderr, name, fmt.Sprintf("%s takes %s", name, argsDescription(cmd.args)))
	}
	if opts.timeout <= 0 {
		return reportUsage(stderr, name, "--timeout must be positive")
	}
	s := newSession(opts, env, stdout, stderr)
	defer s.close()
	return report(ctx, stderr, name, s.describeError, act(ctx, s, positional))
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef makes a usage error.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// report prints err and picks the exit status.
func report(ctx context.Context, stderr io.Writer, cmdName string, describe func(error) *models.Error, err error) int {
	if err == nil {
		return ExitOK
	}
	var usage *usageError
	if errors.As(err, &usage) {
		return reportUsage(stderr, cmdName, usage.msg)
	}
	if ctx.Err() != nil && (status.Code(err) == codes.Canceled || errors.Is(err, context.Canceled)) {
		fmt.Fprintln(stderr, "droverctl: interrupted")
		return ExitInterrupted
	}
	e := describe(err)
	fmt.Fprintf(stderr, "droverctl: %s: %s\n", output.Printable(string(e.Type)), output.Printable(e.Message))
	return ExitFailure
}

func reportUsage(stderr io.Writer, cmdName, msg string) int {
	fmt.Fprintf(stderr, "droverctl: %s\n", msg)
	if cmdName == "" {
		fmt.Fprintln(stderr, "Run 'droverctl help' for usage.")
	} else {
		fmt.Fprintf(stderr, "Run 'droverctl %s -h' for usage.\n", cmdName)
	}
	return ExitUsage
}

// reportParseError prints help for -h (exit 0) or the flag error (exit 2).
func reportParseError(stdout, stderr io.Writer, err error, cmdName string, help func(io.Writer)) int {
	if errors.Is(err, flag.ErrHelp) {
		help(stdout)
		return ExitOK
	}
	return reportUsage(stderr, cmdName, err.Error())
}

// newFlagSet makes a flag set that reports errors to Run instead of printing them.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
