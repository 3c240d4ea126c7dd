package docs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// commandTimeout bounds one run of a documented command (make up builds and starts
	// everything).
	commandTimeout = 6 * time.Minute
	// eventuallyDeadline bounds the retries of a `# eventually` command.
	eventuallyDeadline = 3 * time.Minute
	eventuallyInterval = 2 * time.Second
)

// TestDocs runs the console blocks of README.md, docs/api.md and docs/operations.md in
// order on one dev stack of its own (a scratch copy of the repository in a network
// namespace of its own) and compares each command's output and exit status with the
// documented ones. A document stops at its first failing command; the next document
// still runs. The stack is stopped and the namespace removed at the end, also on failure.
func TestDocs(t *testing.T) {
	s := newStack(t)
	for _, file := range Files {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(s.root, file))
			require.NoError(t, err)
			blocks, err := Parse(file, string(data))
			require.NoError(t, err)
			var vars []string // the document's shell variables so far
			for _, b := range blocks {
				if b.Skip != "" {
					t.Logf("%s:%d: skipped: %s", file, b.Line, b.Skip)
					continue
				}
				for _, c := range b.Commands {
					vars = s.check(t, file, c, vars)
				}
			}
		})
	}
}

// check runs one documented command and fails t unless its output and status are the
// documented ones; it returns vars with the variable an assignment command set.
func (s *stack) check(t *testing.T, file string, c Command, vars []string) []string {
	t.Helper()
	where := file + ":" + itoa(c.Line)
	if assignment.MatchString(c.Text) {
		v, err := s.evalAssignment(c.Text, vars)
		require.NoError(t, err, "%s: $ %s", where, c.Text)
		return append(vars, v)
	}
	start := time.Now()
	deadline := start.Add(eventuallyDeadline)
	for attempt := 1; ; attempt++ {
		out, code, err := s.run(c.Text, vars, commandTimeout)
		require.NoError(t, err, "%s: $ %s\n%s", where, c.Text, out)
		mismatch := compare(c, out, code)
		if mismatch == "" {
			t.Logf("%s: ok in %s (attempt %d): $ %s%s", where, time.Since(start).Round(time.Millisecond), attempt, firstLine(c.Text), head(out))
			return vars
		}
		if !c.Eventually || time.Now().After(deadline) {
			if keepGoing() {
				t.Errorf("%s: $ %s\n%s", where, c.Text, mismatch)
				return vars
			}
			t.Fatalf("%s: $ %s\n%s", where, c.Text, mismatch)
		}
		time.Sleep(eventuallyInterval)
	}
}

// compare says how a run differs from the documented command ("" when it does not).
func compare(c Command, out string, code int) string {
	if code != c.Exit {
		return "exit status " + itoa(code) + ", documented " + itoa(c.Exit) + "; output:\n" + strings.Join(elide(OutputLines(out)), "\n")
	}
	if len(c.Expected) == 0 {
		return ""
	}
	if err := Match(c.Expected, out); err != nil {
		return err.Error()
	}
	return ""
}

// KeepGoingEnv, when true, makes a mismatch fail the test without stopping its
// document, so that one run shows every drifted command (for whoever edits the docs).
const KeepGoingEnv = "DOCS_TEST_KEEP_GOING"

func keepGoing() bool {
	v, err := strconv.ParseBool(os.Getenv(KeepGoingEnv))
	return err == nil && v
}

// logLines is how many lines of a passing command's output the log shows.
const logLines = 12

// head is the start of a command's output, indented, for the log.
func head(out string) string {
	lines := OutputLines(out)
	more := ""
	if len(lines) > logLines {
		more = "\n\t(" + strconv.Itoa(len(lines)-logLines) + " more lines)"
		lines = lines[:logLines]
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n\t" + strings.Join(lines, "\n\t") + more
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func itoa(i int) string { return strconv.Itoa(i) }
