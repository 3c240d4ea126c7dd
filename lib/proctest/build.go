package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildAndRun is the TestMain of a binary's tests: it builds each package (package path →
// binary name, e.g. {".": "bbs", "drover.dev/bbs/cmd/bbs": "bbs"}) into a fresh
// temporary directory, stores that directory in *binDir, runs the tests, removes the
// directory and exits with the tests' code. A failed build exits 1.
func BuildAndRun(m *testing.M, binDir *string, binaries map[string]string) {
	dir, err := os.MkdirTemp("", "drover-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binDir = dir
	for pkg, name := range binaries {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", name, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
