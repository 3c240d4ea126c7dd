package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// Wildcard in expected output: a line that is only `...` stands for any number of
// lines (none included); `...` inside a line for any part of a line.
const Wildcard = "..."

var spaces = regexp.MustCompile(`[ \t]+`)

// normalize trims a line and collapses each run of spaces and tabs into one space, so
// that table columns whose width depends on their content compare equal.
func normalize(line string) string {
	return spaces.ReplaceAllString(strings.TrimSpace(strings.TrimSuffix(line, "\r")), " ")
}

// OutputLines splits a command's output into normalised lines, without trailing empty
// ones.
func OutputLines(out string) []string {
	lines := strings.Split(out, "\n")
	for i := range lines {
		lines[i] = normalize(lines[i])
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// Match reports whether output is what expected shows (see Wildcard); whitespace runs
// compare equal and leading and trailing whitespace is ignored. The error shows both.
func Match(expected []string, output string) error {
	got := OutputLines(output)
	pats := make([]*regexp.Regexp, len(expected))
	for i, e := range expected {
		e = normalize(e)
		if e == Wildcard {
			continue
		}
		parts := strings.Split(e, Wildcard)
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		pats[i] = regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
	}
	memo := map[[2]int]bool{}
	var match func(ei, gi int) bool
	match = func(ei, gi int) bool {
		key := [2]int{ei, gi}
		if v, ok := memo[key]; ok {
			return v
		}
		var ok bool
		switch {
		case ei == len(pats):
			ok = gi == len(got)
		case pats[ei] == nil: // a whole-line wildcard: skip 0..n lines
			for k := gi; k <= len(got) && !ok; k++ {
				ok = match(ei+1, k)
			}
		default:
			ok = gi < len(got) && pats[ei].MatchString(got[gi]) && match(ei+1, gi+1)
		}
		memo[key] = ok
		return ok
	}
	if match(0, 0) {
		return nil
	}
	return fmt.Errorf("output does not match the documented one\n--- documented:\n%s\n--- got:\n%s",
		strings.Join(expected, "\n"), strings.Join(elide(got), "\n"))
}

// Bounds of the output an error shows: its first and last lines.
const (
	shownHead = 200
	shownTail = 100
)

// elide keeps the first shownHead and the last shownTail lines of a long output.
func elide(lines []string) []string {
	if len(lines) <= shownHead+shownTail {
		return lines
	}
	out := append([]string{}, lines[:shownHead]...)
	out = append(out, fmt.Sprintf("(%d lines not shown)", len(lines)-shownHead-shownTail))
	return append(out, lines[len(lines)-shownTail:]...)
}
