package docs

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Files are the documents whose console blocks the docs test runs, in this order, on
// one stack (paths relative to the repository root).
var Files = []string{"README.md", "docs/api.md", "docs/operations.md"}

// Limits of one document, so that a runaway file fails parsing instead of the test.
const (
	maxDocBytes        = 1 << 20
	maxCommandsPerDoc  = 1000
	maxExpectedPerCmd  = 500
	maxCommandLines    = 50
	consoleFence       = "```console"
	skipMarkerPrefix   = "<!-- doctest: skip"
	eventuallyMarker   = "eventually"
	continuationSuffix = `\`
)

// Block is one ```console block of a document.
type Block struct {
	File string // the document, relative to the repository root
	Line int    // 1-based line of the opening fence
	// Skip is the reason of a `<!-- doctest: skip REASON -->` marker right before the
	// block; a skipped block is parsed but not run.
	Skip     string
	Commands []Command
}

// Command is one `$ ` line (with its `\` continuation lines) and the output the
// document shows for it.
type Command struct {
	Line int    // 1-based line of the `$ ` prompt
	Text string // the shell command, continuation lines joined with newlines
	// Expected are the output lines the document shows; empty means the output is not
	// compared (only the exit status is).
	Expected []string
	// Exit is the expected exit status: 0 unless the output ends in `[exit N]`.
	Exit int
	// Eventually is set by a trailing `# eventually` comment: the command is retried
	// until its output and status match or a deadline passes (converging state).
	Eventually bool
}

var (
	exitLine       = regexp.MustCompile(`^\[exit ([0-9]{1,3})\]$`)
	eventuallyRe   = regexp.MustCompile(`#\s*` + eventuallyMarker + `\b`)
	skipRe         = regexp.MustCompile(`^<!-- doctest: skip (.*\S)\s*-->$`)
	skipReasonTest = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*\b|\bpending\b`)
)

// Parse extracts the console blocks of one document. Every syntax error of the
// document is reported (with its line), not only the first.
func Parse(file, text string) ([]Block, error) {
	if len(text) > maxDocBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the limit of %d", file, len(text), maxDocBytes)
	}
	var (
		blocks   []Block
		errs     []string
		cur      *Block
		pendSkip string
		skipLine int
		fence    bool // inside any fenced block
		commands int
	)
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: %s", file, line, fmt.Sprintf(format, args...)))
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), maxDocBytes)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && !fence && strings.HasPrefix(trimmed, skipMarkerPrefix):
			m := skipRe.FindStringSubmatch(trimmed)
			switch {
			case m == nil:
				fail(n, "a skip marker is `<!-- doctest: skip REASON -->` with a reason")
			case !skipReasonTest.MatchString(m[1]):
				fail(n, "the skip reason %q names no test that covers the block instead (TestXxx), nor says it is pending", m[1])
			default:
				pendSkip, skipLine = m[1], n
			}
		case cur == nil && !fence && trimmed == consoleFence:
			cur = &Block{File: file, Line: n, Skip: pendSkip}
			pendSkip = ""
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			fence = !fence
			if pendSkip != "" && fence {
				fail(skipLine, "a skip marker must come right before a ```console block")
				pendSkip = ""
			}
		case cur != nil && trimmed == "```":
			if len(cur.Commands) == 0 {
				fail(cur.Line, "a console block without a `$ ` command")
			}
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			parseLine(cur, line, n, fail)
			if strings.HasPrefix(line, "$ ") {
				commands++
			}
		default:
			if pendSkip != "" && trimmed != "" {
				fail(skipLine, "a skip marker must come right before a ```console block")
				pendSkip = ""
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if cur != nil {
		fail(cur.Line, "a console block that is never closed")
	}
	if pendSkip != "" {
		fail(skipLine, "a skip marker must come right before a ```console block")
	}
	if commands > maxCommandsPerDoc {
		fail(n, "%d commands, more than the limit of %d", commands, maxCommandsPerDoc)
	}
	finish(blocks)
	for _, b := range blocks {
		for _, c := range b.Commands {
			checkCommand(c, fail)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return blocks, nil
}

// parseLine adds one line of a console block to it: a command, a continuation of the
// previous command, or a line of expected output.
func parseLine(b *Block, line string, n int, fail func(int, string, ...any)) {
	last := len(b.Commands) - 1
	switch {
	case strings.HasPrefix(line, "$ "):
		b.Commands = append(b.Commands, Command{Line: n, Text: strings.TrimSpace(line[2:])})
	case line == "$":
		fail(n, "an empty command")
	case last < 0:
		if strings.TrimSpace(line) != "" {
			fail(n, "output before the first `$ ` command")
		}
	case len(b.Commands[last].Expected) == 0 && strings.HasSuffix(b.Commands[last].Text, continuationSuffix):
		c := &b.Commands[last]
		if strings.Count(c.Text, "\n") >= maxCommandLines {
			fail(n, "a command of more than %d lines", maxCommandLines)
			return
		}
		c.Text += "\n" + line
	default:
		c := &b.Commands[last]
		if len(c.Expected) >= maxExpectedPerCmd {
			if len(c.Expected) == maxExpectedPerCmd {
				fail(n, "more than %d lines of expected output", maxExpectedPerCmd)
				c.Expected = append(c.Expected, "")
			}
			return
		}
		c.Expected = append(c.Expected, line)
	}
}

// checkCommand reports what is wrong with a finished command.
func checkCommand(c Command, fail func(int, string, ...any)) {
	if strings.HasSuffix(c.Text, continuationSuffix) {
		fail(c.Line, "the command ends with a `\\` continuation but no line follows")
	}
	if c.Eventually && len(c.Expected) == 0 && c.Exit == 0 {
		fail(c.Line, "`# eventually` needs expected output to wait for")
	}
	for _, e := range c.Expected {
		if exitLine.MatchString(e) {
			fail(c.Line, "`%s` must be the last line of the command's output", e)
		}
	}
}

// finish normalises the commands of parsed blocks: trailing empty expected lines are
// dropped, a last `[exit N]` line becomes Exit, and the eventually marker is read.
func finish(blocks []Block) {
	for bi := range blocks {
		for ci := range blocks[bi].Commands {
			c := &blocks[bi].Commands[ci]
			for len(c.Expected) > 0 && strings.TrimSpace(c.Expected[len(c.Expected)-1]) == "" {
				c.Expected = c.Expected[:len(c.Expected)-1]
			}
			if k := len(c.Expected); k > 0 {
				if m := exitLine.FindStringSubmatch(c.Expected[k-1]); m != nil {
					c.Exit, _ = strconv.Atoi(m[1])
					c.Expected = c.Expected[:k-1]
				}
			}
			if len(c.Expected) == 0 {
				c.Expected = nil
			}
			c.Eventually = eventuallyRe.MatchString(lastLine(c.Text))
		}
	}
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
