// Package proctest runs a drover binary under a test: its output is captured, it is
// killed at cleanup if still running (and its output logged when the test failed), and
// its exit code can be awaited with a deadline.
package proctest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/lib/handover"
)

// Process is a running binary.
type Process struct {
	name   string
	cmd    *exec.Cmd
	output lockedBuffer
	exited chan struct{}
	err    error // the Wait error, once exited is closed
}

// Start runs binary with args; name labels it in failure messages. The child inherits
// the listeners of every address the test reserved (ReserveAddress) since its last Start.
func Start(t testing.TB, name, binary string, args ...string) *Process {
	t.Helper()
	p := &Process{name: name, cmd: exec.Command(binary, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.output, &p.output
	release, err := handover.Pass(p.cmd, takeReserved(t)...)
	require.NoError(t, err)
	err = p.cmd.Start()
	release()
	require.NoError(t, err)
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", p.name, p.Output())
		}
	})
	return p
}

// Output is everything the process wrote to stdout and stderr so far.
func (p *Process) Output() string { return p.output.String() }

// Exited is closed once the process has exited; Err is then its Wait error.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Err is the process's Wait error (nil for exit status 0); valid once Exited is closed.
func (p *Process) Err() error { return p.err }

// Signal sends sig to the process.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// WaitExit waits up to timeout for the process to exit and returns its exit code.
func (p *Process) WaitExit(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		t.Fatalf("%s still running after %s", p.name, timeout)
	}
	var exitErr *exec.ExitError
	if errors.As(p.err, &exitErr) {
		return exitErr.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

// FreeAddress returns a loopback address with a port the OS just handed out and that is
// free again: another process may take it before anyone binds it. It is for an address
// that must stay closed for a while, or that the test itself serves at once; a binary's
// listening address is ReserveAddress's.
func FreeAddress(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	return lis.Addr().String()
}

// ReserveAddress returns a loopback address for the next binary the test starts: the
// port's listener stays open in the test until Start hands it to that child, which serves
// on it (lib/handover), so that no other process can take the port in between. Start
// takes every address the test reserved since its last Start, so reserve a child's
// addresses right before starting it. A reservation no Start took is released when the
// test ends.
func ReserveAddress(t testing.TB) string {
	t.Helper()
	r, err := handover.Reserve()
	require.NoError(t, err)
	reserved.mu.Lock()
	reserved.byTest[t] = append(reserved.byTest[t], r)
	reserved.mu.Unlock()
	t.Cleanup(func() {
		_ = r.Close()
		reserved.mu.Lock()
		delete(reserved.byTest, t)
		reserved.mu.Unlock()
	})
	return r.Address()
}

// reserved holds each test's reservations until its next Start.
var reserved = struct {
	mu     sync.Mutex
	byTest map[testing.TB][]*handover.Reservation
}{byTest: map[testing.TB][]*handover.Reservation{}}

// takeReserved removes and returns t's reservations.
func takeReserved(t testing.TB) []*handover.Reservation {
	reserved.mu.Lock()
	defer reserved.mu.Unlock()
	rs := reserved.byTest[t]
	delete(reserved.byTest, t)
	return rs
}

// WriteJSON writes v as JSON to a new file named name in a temporary directory and
// returns its path (a configuration file for -config).
func WriteJSON(t testing.TB, name string, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// lockedBuffer collects a process's output from its copying goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
