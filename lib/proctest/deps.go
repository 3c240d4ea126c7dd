package proctest

import (
	"os/exec"
	"strings"
	"testing"
)

// Deps lists the packages pkg imports, directly or not, and pkg itself (`go list -deps`,
// run in the test's package directory, so "." is the package under test).
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, exit.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// Forbidden returns the packages of deps that are one of the prefixes or inside one
// (a module path or a package tree, e.g. "github.com/jackc/pgx" or "drover.dev/bbs/store").
func Forbidden(deps []string, prefixes ...string) []string {
	var found []string
	for _, dep := range deps {
		for _, prefix := range prefixes {
			prefix = strings.TrimSuffix(prefix, "/")
			if dep == prefix || strings.HasPrefix(dep, prefix+"/") {
				found = append(found, dep)
				break
			}
		}
	}
	return found
}
