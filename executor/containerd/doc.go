// Package containerd implements executor.Runtime on a containerd daemon: one
// containerd namespace per cell, a long-lived busybox init per container, processes
// started with task.Exec, output kept in per-process log files under the state dir
// (so it survives a restart of the rep), limits through cgroups, networking through
// executor/network, and a polled disk quota on the container's overlay upper dir.
// With Config.UserNamespace, unprivileged containers run in a user namespace on a
// remapped rootfs (userns.go, remap.go).
package containerd
