package devstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binary is a program of the repository: its file name and the package that builds it.
type Binary struct {
	Name    string
	Package string
	// Static builds without cgo (a program that runs inside containers of any stack).
	Static bool
}

// The binaries the stack runs or offers.
var (
	BBSBinary       = Binary{Name: "bbs", Package: "./bbs/cmd/bbs"}
	DroverctlBinary = Binary{Name: "droverctl", Package: "./ctl/cmd/droverctl"}
)

// Build compiles each binary from the repository at root into binDir. Each goes through
// a temporary file and a rename, so a copy that is running keeps working.
func Build(ctx context.Context, root, binDir string, binaries ...Binary) error {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	for _, b := range binaries {
		tmp, err := os.CreateTemp(binDir, "."+b.Name+".build-*")
		if err != nil {
			return fmt.Errorf("build %s: %w", b.Name, err)
		}
		tmp.Close()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp.Name(), b.Package)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
		if b.Static {
			cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("build %s (%s): %w\n%s", b.Name, b.Package, err, strings.TrimSpace(string(out)))
		}
		if err := os.Rename(tmp.Name(), filepath.Join(binDir, b.Name)); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("build %s: %w", b.Name, err)
		}
	}
	return nil
}
