package builder

import (
	"fmt"
	"strings"
)

// Step names a buildpack script the builder runs.
type Step string

// The buildpack scripts.
const (
	StepDetect   Step = "detect"
	StepSupply   Step = "supply"
	StepFinalize Step = "finalize"
	StepCompile  Step = "compile"
	StepRelease  Step = "release"
)

// Buildpack is one buildpack of the order: its name and which scripts it has.
type Buildpack struct {
	Name string
	Dir  string
	Has  map[Step]bool
}

// Run is one planned script run: buildpack Index (its IDX in DEPS_DIR) runs Step.
type Run struct {
	Index int
	Step  Step
}

// Plan says which scripts run for a chain of buildpacks (one detected buildpack, or the
// user's list): every buildpack but the last runs supply (it must have it); the last runs
// supply (if it has it) and finalize when it has finalize, else compile. The error names
// every buildpack that lacks what it needs.
func Plan(bps []Buildpack) ([]Run, error) {
	if len(bps) == 0 {
		return nil, fmt.Errorf("no buildpacks to run")
	}
	var runs []Run
	var bad []string
	last := len(bps) - 1
	for i, bp := range bps[:last] {
		if !bp.Has[StepSupply] {
			bad = append(bad, fmt.Sprintf("buildpack %s has no bin/supply, so it cannot run before the final buildpack %s", bp.Name, bps[last].Name))
			continue
		}
		runs = append(runs, Run{i, StepSupply})
	}
	final := bps[last]
	switch {
	case final.Has[StepFinalize]:
		if final.Has[StepSupply] {
			runs = append(runs, Run{last, StepSupply})
		}
		runs = append(runs, Run{last, StepFinalize})
	case final.Has[StepCompile]:
		runs = append(runs, Run{last, StepCompile})
	default:
		bad = append(bad, fmt.Sprintf("buildpack %s has neither bin/finalize nor bin/compile, so it cannot be the final buildpack", final.Name))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return runs, nil
}

// ParseOrder splits the -order flag (NAME1,NAME2,...) and checks each name: not empty,
// no path separators, no dot names, not repeated.
func ParseOrder(s string) ([]string, error) {
	var names, bad []string
	seen := map[string]bool{}
	for i, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			bad = append(bad, fmt.Sprintf("entry %d is empty", i+1))
		case n == "." || n == ".." || strings.ContainsAny(n, `/\`) || len(n) > 255:
			bad = append(bad, fmt.Sprintf("%q is not a buildpack name (no slashes, not . or .., at most 255 bytes)", n))
		case seen[n]:
			bad = append(bad, fmt.Sprintf("%q is given twice", n))
		default:
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("-order: %s", strings.Join(bad, "; "))
	}
	return names, nil
}
