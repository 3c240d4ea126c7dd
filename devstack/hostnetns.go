package devstack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// nsenterPath is the program that starts a test host's processes in its network
// namespace: `nsenter --net=/run/netns/NAME -- PROGRAM ARGS` changes only the network
// namespace (unlike `ip netns exec`, which also makes a mount namespace, where a rep's
// namespace files would be invisible to containerd) and execs PROGRAM in place, so the
// pid is the program's.
const nsenterPath = "nsenter"

// inNetns runs fn on an OS thread inside the network namespace netns: "" runs it where
// the caller is (the root namespace), the name of a namespace that no longer exists runs
// it in a new, empty namespace, so that nothing of the root namespace is touched by
// clean-up meant for a removed host. The thread then returns to its namespace and to
// the Go scheduler; only if that fails is it discarded (which would SIGKILL the children
// it forked with a parent-death signal, so it is the exception). fn must do its network
// work on the calling goroutine (netlink sockets, iptables child processes).
func inNetns(netns string, fn func() error) error {
	if netns == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns of this thread: %w", err)
			return
		}
		defer home.Close()
		err = enterNetns(netns, fn)
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else: still locked, the thread ends with this goroutine
		errc <- err
	}()
	return <-errc
}

// enterNetns switches the calling (locked) thread into netns, or into a new empty
// namespace when netns no longer exists, and runs fn.
func enterNetns(netns string, fn func() error) error {
	f, err := os.Open(NetnsPath(netns))
	switch {
	case err == nil:
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter netns %s: %w", netns, err)
		}
	case os.IsNotExist(err):
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("empty netns for removed %s: %w", netns, err)
		}
	default:
		return err
	}
	return fn()
}

// DialContext opens a TCP connection from inside the host's network namespace (the
// socket is made on a thread in the namespace and stays there), as a program on that
// host would.
func (h Host) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := inNetns(h.Netns, func() error {
		if _, err := os.Stat(h.NetnsPath()); err != nil {
			return fmt.Errorf("host %s is gone: %w", h.Name, err)
		}
		var err error
		conn, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// HTTPClient is an HTTP client whose connections start on the host (DialContext),
// without keep-alives (each request opens its own connection from the host).
func (h Host) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DialContext: h.DialContext, DisableKeepAlives: true},
	}
}
