// Command mkrootfs writes the cell's preloaded busybox image, an OCI image layout tarball
// built from a static busybox binary, that containerd can import without a registry. The
// file is rewritten (atomically) only when it is missing or differs.
//
// Usage: mkrootfs -busybox /usr/bin/busybox -ref drover.local/rootfs/busybox:latest -o FILE
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
	out := flags.String("o", "", "output file (required)")
	if err := flags.Parse(args); err != nil {
		return exitUsage
	}
	if *out == "" || flags.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: mkrootfs [-busybox PATH] [-ref NAME] -o FILE")
		return exitUsage
	}
	if err := rootfs.EnsureBusyboxImage(*out, *busybox, *ref); err != nil {
		fmt.Fprintln(stderr, "mkrootfs:", err)
		return exitFatal
	}
	return exitOK
}
