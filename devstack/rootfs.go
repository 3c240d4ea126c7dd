package devstack

import (
	"os"
	"path/filepath"

	"drover.dev/executor/rootfs"
)

// BusyboxBinary is Debian's busybox-static, the only file of the preloaded busybox image.
const BusyboxBinary = "/usr/bin/busybox"

// ensureBusyboxImage writes the preloaded:busybox OCI image tarball at path unless it is
// already there and current.
func ensureBusyboxImage(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return rootfs.EnsureBusyboxImage(path, BusyboxBinary, rootfs.DefaultBusyboxRef)
}
