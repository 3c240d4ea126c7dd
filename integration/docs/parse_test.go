package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository root: two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

// TestDocsParse checks the syntax of every console block of the documents the docs
// test runs, without a stack: it fails fast on a malformed block.
func TestDocsParse(t *testing.T) {
	root := repoRoot(t)
	tests := testNames(t, root)
	for _, f := range Files {
		data, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		blocks, err := Parse(f, string(data))
		require.NoError(t, err)
		require.NotEmpty(t, blocks, "%s has no ```console block", f)
		for _, b := range blocks {
			// A skip names tests that cover the block instead: they must exist.
			for _, name := range testNameRe.FindAllString(b.Skip, -1) {
				require.True(t, tests[name], "%s:%d: the skip reason names %s, which is no test of the repository", f, b.Line, name)
			}
		}
	}
}

var (
	testNameRe = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	testFuncRe = regexp.MustCompile(`(?m)^func (Test[A-Z][A-Za-z0-9_]*)\(`)
)

// testNames are the names of the Go tests of the repository (func TestXxx in
// *_test.go files).
func testNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".drover" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFuncRe.FindAllStringSubmatch(string(data), -1) {
			names[m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	return names
}

func TestParse(t *testing.T) {
	doc := strings.Join([]string{
		"text",
		"```sh",
		"$ not run",
		"```",
		"```console",
		"$ echo a \\",
		"  b",
		"a b",
		"$ false",
		"[exit 1]",
		"$ bin/droverctl actual-lrps   # eventually",
		"...RUNNING...",
		"",
		"```",
		"<!-- doctest: skip covered by TestCellsPlacement -->",
		"```console",
		"$ make up CELLS=9",
		"```",
	}, "\n")
	blocks, err := Parse("x.md", doc)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	require.Equal(t, 5, blocks[0].Line)
	cs := blocks[0].Commands
	require.Len(t, cs, 3)
	require.Equal(t, Command{Line: 6, Text: "echo a \\\n  b", Expected: []string{"a b"}}, cs[0])
	require.Equal(t, Command{Line: 9, Text: "false", Exit: 1}, cs[1])
	require.True(t, cs[2].Eventually)
	require.Equal(t, []string{"...RUNNING..."}, cs[2].Expected)
	require.Equal(t, "covered by TestCellsPlacement", blocks[1].Skip)
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"output first":       {"```console\nhello\n$ x\n```", "x.md:2: output before the first"},
		"no command":         {"```console\n```", "x.md:1: a console block without"},
		"unclosed":           {"```console\n$ x\n", "x.md:1: a console block that is never closed"},
		"exit not last":      {"```console\n$ x\n[exit 2]\nmore\n```", "must be the last line"},
		"skip without test":  {"<!-- doctest: skip slow -->\n```console\n$ x\n```", "names no test"},
		"skip without block": {"<!-- doctest: skip TestX -->\ntext\n```console\n$ x\n```", "right before a ```console block"},
		"skip no reason":     {"<!-- doctest: skip -->\n```console\n$ x\n```", "with a reason"},
		"dangling backslash": {"```console\n$ x \\\n```", "continuation but no line"},
		"eventually no out":  {"```console\n$ x # eventually\n```", "needs expected output"},
		"empty command":      {"```console\n$\n```", "an empty command"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("x.md", tc.doc)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := Parse("x.md", "```console\nout\n```\n```console\n```")
	require.ErrorContains(t, err, "x.md:2:")
	require.ErrorContains(t, err, "x.md:4:", "every error is reported")
}

func TestMatch(t *testing.T) {
	for name, tc := range map[string]struct {
		expected []string
		out      string
		ok       bool
	}{
		"exact":                 {[]string{"a", "b"}, "a\nb\n", true},
		"extra line":            {[]string{"a"}, "a\nb\n", false},
		"missing line":          {[]string{"a", "b"}, "a\n", false},
		"columns":               {[]string{"X  Y    Z"}, "X Y\tZ   \n", true},
		"in-line wildcard":      {[]string{"since ...s ago"}, "since 12s ago", true},
		"in-line wrong":         {[]string{"since ...s ago"}, "since 12m ago", false},
		"whole-line wildcard":   {[]string{"a", "...", "z"}, "a\nb\nc\nz", true},
		"wildcard matches none": {[]string{"a", "...", "z"}, "a\nz", true},
		"trailing wildcard":     {[]string{"a", "..."}, "a", true},
		"regexp chars literal":  {[]string{"(a.b)*"}, "(a.b)*", true},
		"regexp chars no match": {[]string{"a.b"}, "axb", false},
		"empty output":          {nil, "", true},
	} {
		t.Run(name, func(t *testing.T) {
			err := Match(tc.expected, tc.out)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestElide(t *testing.T) {
	long := make([]string, shownHead+shownTail+7)
	for i := range long {
		long[i] = strconv.Itoa(i)
	}
	got := elide(long)
	require.Len(t, got, shownHead+shownTail+1)
	require.Equal(t, "0", got[0])
	require.Equal(t, "(7 lines not shown)", got[shownHead])
	require.Equal(t, long[len(long)-1], got[len(got)-1])
	require.Equal(t, []string{"a"}, elide([]string{"a"}))
}
