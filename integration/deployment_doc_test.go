package integration

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// docBlock is one runnable shell block of docs/deployment.md: a ```sh block whose first
// line is "# run on: HOST ...".
type docBlock struct {
	// Heading is the "## " heading the block is under.
	Heading string
	// RunOn is what follows "# run on:" up to a parenthesis: "admin", "control-1",
	// "router", "every cell", "client".
	RunOn string
	// Script is the block's text, its first line included.
	Script string
	// Line is the block's first line number in the file (1-based).
	Line int
}

// readDocBlocks returns the runnable shell blocks of the Markdown file at path, in order.
// A ```sh block without a "# run on:" first line is refused: every shell block of the
// page is meant to be run somewhere.
func readDocBlocks(path string) ([]docBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks  []docBlock
		heading string
		cur     *docBlock
		lines   []string
		n       int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.Script = strings.Join(lines, "\n") + "\n"
			first, _, _ := strings.Cut(cur.Script, "\n")
			on, ok := strings.CutPrefix(first, "# run on:")
			if !ok {
				return nil, fmt.Errorf("%s:%d: a sh block must start with \"# run on: HOST\"", path, cur.Line)
			}
			if i := strings.Index(on, "("); i >= 0 {
				on = on[:i]
			}
			cur.RunOn = strings.TrimSpace(on)
			blocks = append(blocks, *cur)
			cur, lines = nil, nil
		case cur != nil:
			lines = append(lines, line)
		case strings.HasPrefix(line, "## "):
			heading = strings.TrimPrefix(line, "## ")
		case strings.TrimSpace(line) == "```sh":
			cur = &docBlock{Heading: heading, Line: n + 1}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: unterminated block", path, cur.Line)
	}
	return blocks, nil
}
