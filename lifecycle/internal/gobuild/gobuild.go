// Package gobuild builds the lifecycle's commands for end-to-end tests.
package gobuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Command builds the main package in dir (e.g. ".") as a static binary in a temp dir
// and returns its path.
func Command(t *testing.T, dir, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
	return out
}
