// Command mkrootfs writes a cell's preloaded image, an OCI image layout tarball that
// containerd can import without a registry: the busybox stack built from a static busybox
// binary, or, with -rootfs-tar, a stack's root filesystem tar (scripts/stack.sh) as one
// layer. The file is rewritten (atomically) only when it is missing or stale.
//
// Usage: mkrootfs -busybox /usr/bin/busybox -ref drover.local/rootfs/busybox:latest -o FILE
//
//	mkrootfs -rootfs-tar bookworm-HASH.tar -ref drover.local/rootfs/bookworm:latest -o FILE
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"drover.dev/executor/rootfs"
)

// Exit codes.
const (
	exitOK    = 0
	exitFatal = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is the whole command: it returns the exit code.
func run(args []string, stderr io.Writer) int {
	flags := flag.NewFlagSet("mkrootfs", flag.ContinueOnError)
	flags.SetOutput(stderr)
	busybox := flags.String("busybox", "/usr/bin/busybox", "path to a static busybox binary")
	ref := flags.String("ref", rootfs.DefaultBusyboxRef, "image name written into the index annotations")
	rootfsTar := flags.String("rootfs-tar", "", "a stack's root filesystem tar: the image's one layer (instead of -busybox)")
	out := flags.String("o", "", "output file (required)")
	if err := flags.Parse(args); err != nil {
		return exitUsage
	}
	if *out == "" || flags.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: mkrootfs [-busybox PATH | -rootfs-tar FILE] [-ref NAME] -o FILE")
		return exitUsage
	}
	ensure := func() error { return rootfs.EnsureBusyboxImage(*out, *busybox, *ref) }
	if *rootfsTar != "" {
		ensure = func() error { return rootfs.EnsureTarImage(*out, *rootfsTar, *ref) }
	}
	if err := ensure(); err != nil {
		fmt.Fprintln(stderr, "mkrootfs:", err)
		return exitFatal
	}
	return exitOK
}
