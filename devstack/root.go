package devstack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RootEnv names the environment variable that overrides where the repository is.
const RootEnv = "DROVER_ROOT"

// FindRoot returns the repository root: $DROVER_ROOT when set, otherwise the nearest
// directory at or above the working directory that holds go.work.
func FindRoot() (string, error) {
	if root := os.Getenv(RootEnv); root != "" {
		return filepath.Abs(root)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no go.work above the working directory (set " + RootEnv + ")")
		}
		dir = parent
	}
}

// BinDir is where the repository's binaries and Go tools live: $DROVER_BIN or <root>/bin.
func BinDir(root string) string {
	if dir := os.Getenv("DROVER_BIN"); dir != "" {
		return dir
	}
	return filepath.Join(root, "bin")
}

// DefaultHome is the dev stack's home: $DROVER_HOME or <root>/.drover.
func DefaultHome(root string) string {
	if dir := os.Getenv("DROVER_HOME"); dir != "" {
		return dir
	}
	return filepath.Join(root, ".drover")
}
