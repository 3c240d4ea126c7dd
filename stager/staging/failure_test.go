package staging_test

import (
	"fmt"
	"strings"
	"testing"

	"drover.dev/stager/staging"
)

func TestFailure(t *testing.T) {
	many := make([]string, 30)
	for i := range many {
		many[i] = fmt.Sprintf("line %d", i)
	}
	cases := []struct {
		name, reason string
		lines        []string
		want         string
		last         int
	}{
		{"builder's line wins", "Exited with status 223", []string{"npm ERR! x", "builder: buildpack nodejs: bin/supply exited with status 1", "other"},
			"buildpack nodejs: bin/supply exited with status 1", 3},
		{"none detected", "Exited with status 222", []string{"builder: none of the buildpacks detected the app: staticfile, nodejs, go, binary"},
			"none of the buildpacks detected the app: staticfile, nodejs, go, binary", 1},
		{"last builder line", "x", []string{"builder: first", "builder: second"}, "second", 2},
		{"placement failure", "found no compatible cell: rootfs", nil, `no cell serves stack "bookworm"`, 0},
		{"task reason otherwise", "Exited with status 1", []string{"hello"}, "Exited with status 1", 1},
		{"nothing at all", "", nil, "staging failed", 0},
		{"keeps the last 20 lines", "r", many, "r", 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, last := staging.Failure(tc.reason, tc.lines, "bookworm")
			if got != tc.want {
				t.Errorf("reason = %q, want %q", got, tc.want)
			}
			if len(last) != tc.last {
				t.Errorf("last lines = %d, want %d", len(last), tc.last)
			}
			if len(tc.lines) > 0 && len(last) > 0 && last[len(last)-1] != tc.lines[len(tc.lines)-1] {
				t.Errorf("last line = %q", last[len(last)-1])
			}
		})
	}
	_, last := staging.Failure("r", many, "s")
	if !strings.HasPrefix(last[0], "line 10") {
		t.Errorf("first kept line %q, want line 10", last[0])
	}
}
