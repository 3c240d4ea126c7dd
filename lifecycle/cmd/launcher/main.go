// Command launcher starts a staged app: `launcher APP_DIR [START_COMMAND]` sources the
// droplet's profile scripts and execs the start command (from staging_info.json beside
// APP_DIR when none is given) in place of itself.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"drover.dev/lifecycle/launcher"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: launcher APP_DIR [START_COMMAND]")
		os.Exit(2)
	}
	appDir := os.Args[1]
	start := ""
	if len(os.Args) == 3 {
		start = os.Args[2]
	} else {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Clean(appDir)), "staging_info.json"))
		if err == nil {
			start, err = launcher.StartCommandFromStagingInfo(b)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "launcher: no start command given and none in staging_info.json: %v\n", err)
			os.Exit(2)
		}
	}
	plan, err := launcher.Command(appDir, start, os.Environ())
	if err != nil {
		fmt.Fprintf(os.Stderr, "launcher: %v\n", err)
		os.Exit(2)
	}
	if err := os.Chdir(plan.Dir); err != nil {
		fmt.Fprintf(os.Stderr, "launcher: %v\n", err)
		os.Exit(2)
	}
	err = syscall.Exec(plan.Argv[0], plan.Argv, plan.Env)
	fmt.Fprintf(os.Stderr, "launcher: exec %s: %v\n", plan.Argv[0], err)
	os.Exit(2)
}
