package network

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// createNetns makes a new network namespace and pins it by bind-mounting it onto path (a
// new file), so that it outlives this process and a container can join it by path. On
// error nothing is left at path.
func createNetns(path string) (err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("create netns file %s: %w", path, err)
	}
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()

	done := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it ends in the new namespace, and Go then
		// terminates it instead of returning it to the scheduler.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("unshare network namespace: %w", err)
			return
		}
		self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
			done <- fmt.Errorf("bind-mount network namespace onto %s: %w", path, err)
			return
		}
		done <- nil
	}()
	return <-done
}

// removeNetns unmounts and removes the namespace file at path; a missing file is fine.
// The namespace itself goes away with its last user (its veth end with it).
func removeNetns(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil &&
		!errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove netns file %s: %w", path, err)
	}
	return nil
}
