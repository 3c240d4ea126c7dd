// Package commands is droverctl: a cobra command tree that talks to the BBS over
// mutual TLS and prints tables or JSON lines. Run is the whole program, so tests can
// drive it with their own arguments, streams and environment.
package commands

import (
	"context"
	"errors"
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
	c := &cli{opts: globalOptions{timeout: DefaultTimeout}, env: env, stdout: orDiscard(stdout), stderr: orDiscard(stderr)}
	root := c.newRoot()
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	cmd, err := root.ExecuteContextC(ctx)
	if c.session != nil {
		defer c.session.close()
	}
	return c.report(ctx, commandName(cmd), err)
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef makes a usage error.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// report prints err and picks the exit status. An error before any command ran
// (cobra's own) is a mistake in the command line.
func (c *cli) report(ctx context.Context, cmdName string, err error) int {
	if err == nil {
		return ExitOK
	}
	var usage *usageError
	var exit *exitStatusError
	switch {
	case errors.As(err, &exit):
		return exit.code // the remote command's status (exec); it said what it had to
	case errors.As(err, &usage):
		return reportUsage(c.stderr, cmdName, usage.msg)
	case c.session == nil:
		return reportUsage(c.stderr, cmdName, err.Error())
	case ctx.Err() != nil && (status.Code(err) == codes.Canceled || errors.Is(err, context.Canceled)):
		fmt.Fprintln(c.stderr, "droverctl: interrupted")
		return ExitInterrupted
	}
	e := c.session.describeError(err)
	fmt.Fprintf(c.stderr, "droverctl: %s: %s\n", output.Printable(string(e.Type)), output.Printable(e.Message))
	return ExitFailure
}

// errHelpShown is the usage error of a command line whose help was printed instead.
var errHelpShown = &usageError{}

// reportUsage prints a usage error, unless help was shown instead, and where to
// find help.
func reportUsage(stderr io.Writer, cmdName, msg string) int {
	if msg == "" {
		return ExitUsage
	}
	fmt.Fprintf(stderr, "droverctl: %s\n", msg)
	if cmdName == "" {
		fmt.Fprintln(stderr, "Run 'droverctl help' for usage.")
	} else {
		fmt.Fprintf(stderr, "Run 'droverctl %s -h' for usage.\n", cmdName)
	}
	return ExitUsage
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
