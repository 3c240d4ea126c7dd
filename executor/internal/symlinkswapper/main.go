// Command symlinkswapper is a test tool that plays a hostile process in a container:
// it keeps exchanging a directory for a symlink, atomically (renameat2
// RENAME_EXCHANGE), so that a host-side transfer going through that directory finds one
// or the other at every step. The containerd runtime tests and the integration tests
// run it inside containers to show that transfers never leave the container.
//
// Usage: symlinkswapper DIR TARGET [COUNT_FILE]
//
// DIR is made a directory holding "canary" and "sub/canary" (both "decoy\n"), and
// DIR.swap a symlink to TARGET; then the two are exchanged until the process is killed.
// The number of exchanges so far is written to COUNT_FILE every 256 exchanges.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: symlinkswapper DIR TARGET [COUNT_FILE]")
		os.Exit(2)
	}
	dir, target := os.Args[1], os.Args[2]
	countFile := ""
	if len(os.Args) > 3 {
		countFile = os.Args[3]
	}
	if err := setUp(dir, target); err != nil {
		fmt.Fprintln(os.Stderr, "symlinkswapper:", err)
		os.Exit(1)
	}
	for n := 1; ; n++ {
		if err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, dir+".swap", unix.RENAME_EXCHANGE); err != nil {
			fmt.Fprintln(os.Stderr, "symlinkswapper: exchange:", err)
			os.Exit(1)
		}
		if countFile != "" && n%256 == 0 {
			_ = os.WriteFile(countFile, []byte(strconv.Itoa(n)+"\n"), 0o644)
		}
		// Bursts of exchanges a few microseconds apart, then a pause that leaves the CPU
		// to others.
		if n%64 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// setUp makes dir a directory of decoys and dir.swap a symlink to target.
func setUp(dir, target string) error {
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		return err
	}
	for _, name := range []string{"canary", "sub/canary"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("decoy\n"), 0o644); err != nil {
			return err
		}
	}
	_ = os.Remove(dir + ".swap")
	return os.Symlink(target, dir+".swap")
}
