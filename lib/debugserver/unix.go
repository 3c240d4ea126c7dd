package debugserver

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// socketMode is the mode of the admin socket: only the process's user may connect.
const socketMode = 0o600

// listenUnix listens on a unix socket at path that only this user can connect to. The
// socket is bound, set to socketMode and only then listens, so no connection is
// accepted before the mode is set. A stale socket at path (its process gone) is
// replaced; a live one or anything else there is an error. Closing the listener
// removes the socket. Keep the socket's directory private to the service's user: the
// mode is set by path.
func listenUnix(path string) (net.Listener, error) {
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		return nil, fmt.Errorf("unix socket %s: bind: %w", path, err)
	}
	if err := os.Chmod(path, socketMode); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("unix socket %s: listen: %w", path, err)
	}
	lis, err := net.FileListener(f)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	return &unixListener{Listener: lis, path: path}, nil
}

// removeStaleSocket removes a socket at path that no process listens on. A live
// socket, or a file that is not a socket, is left alone and is an error.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unix socket %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("unix socket %s: exists and is not a socket", path)
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return fmt.Errorf("unix socket %s: in use by another process", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unix socket %s: removing the stale socket: %w", path, err)
	}
	return nil
}

// unixListener removes its socket file when closed (a listener made from a file
// descriptor does not).
type unixListener struct {
	net.Listener
	path string
}

func (l *unixListener) Close() error {
	err := l.Listener.Close()
	if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
