// Package handover passes listening TCP sockets from a process to the child that serves
// on them, so that a port chosen by the OS stays taken from the moment it is chosen: a
// test reserves a loopback port (Reserve), writes its address into the child's
// configuration and starts the child with the listener (Pass); the child's servers open
// their listeners with Listen, which takes the passed socket for that address instead of
// binding again. A child given no socket for an address binds it as usual.
package handover

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Env names the variable that tells the child which inherited descriptor listens on
// which address: "ADDRESS=FD" pairs separated by spaces, e.g. "127.0.0.1:4001=3".
const Env = "DROVER_LISTEN_FDS"

// Reservation is a loopback port held open by a listener until it is passed to a child
// or closed.
type Reservation struct {
	lis *net.TCPListener
}

// Reserve listens on a port of 127.0.0.1 that the OS chooses.
func Reserve() (*Reservation, error) {
	lis, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("reserve a loopback port: %w", err)
	}
	return &Reservation{lis: lis}, nil
}

// Address is the reserved address, "127.0.0.1:PORT".
func (r *Reservation) Address() string { return r.lis.Addr().String() }

// Port is the reserved port.
func (r *Reservation) Port() int { return r.lis.Addr().(*net.TCPAddr).Port }

// Close releases the port (this process's copy of the socket: a child it was passed to
// keeps listening).
func (r *Reservation) Close() error { return r.lis.Close() }

// Pass makes cmd's child inherit the listeners of rs (as extra files, named by Env in
// its environment). Call it before cmd.Start and call the returned release after it,
// whether Start succeeded or not: it closes this process's copies of the sockets (the
// reservations are spent), so that the port is free again once the child exits.
func Pass(cmd *exec.Cmd, rs ...*Reservation) (release func(), err error) {
	var files []*os.File
	release = func() {
		for _, f := range files {
			_ = f.Close()
		}
		for _, r := range rs {
			_ = r.Close()
		}
	}
	pairs := make([]string, 0, len(rs))
	for _, r := range rs {
		f, err := r.lis.File() // a duplicate descriptor, inheritable through ExtraFiles
		if err != nil {
			release()
			return func() {}, fmt.Errorf("pass %s: %w", r.Address(), err)
		}
		files = append(files, f)
		pairs = append(pairs, fmt.Sprintf("%s=%d", r.Address(), 3+len(cmd.ExtraFiles)))
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = withoutVar(env, Env)
	if len(pairs) > 0 {
		env = append(env, Env+"="+strings.Join(pairs, " "))
	}
	cmd.Env = env
	return release, nil
}

// withoutVar is env without the variables named name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// inherited is what Env named, parsed at the first Listen (which then unsets Env, so
// that this process's own children do not take it for theirs).
var inherited struct {
	once  sync.Once
	table *table
	err   error
}

// Listen returns the listener this process inherited for address (Pass), or a new TCP
// listener on address when it inherited none.
func Listen(address string) (net.Listener, error) {
	inherited.once.Do(func() {
		inherited.table, inherited.err = parse(os.Getenv(Env))
		_ = os.Unsetenv(Env)
	})
	if inherited.err != nil {
		return nil, inherited.err
	}
	return inherited.table.listen(address)
}

// table maps addresses to inherited descriptors; each is taken at most once.
type table struct {
	mu  sync.Mutex
	fds map[string]int
}

func (t *table) listen(address string) (net.Listener, error) {
	t.mu.Lock()
	fd, ok := t.fds[address]
	delete(t.fds, address)
	t.mu.Unlock()
	if !ok {
		return net.Listen("tcp", address)
	}
	f := os.NewFile(uintptr(fd), "inherited listener "+address)
	defer f.Close()
	lis, err := net.FileListener(f) // a duplicate; f itself is closed
	if err != nil {
		return nil, fmt.Errorf("inherited listener for %s (descriptor %d): %w", address, fd, err)
	}
	if got := lis.Addr().String(); got != address {
		_ = lis.Close()
		return nil, fmt.Errorf("inherited descriptor %d listens on %s, not %s", fd, got, address)
	}
	return lis, nil
}

// parse reads Env's value; every inherited descriptor is marked close-on-exec, so that
// it does not leak into this process's own children.
func parse(value string) (*table, error) {
	fds := map[string]int{}
	for _, pair := range strings.Fields(value) {
		i := strings.LastIndexByte(pair, '=')
		if i <= 0 {
			return nil, fmt.Errorf("%s: %q is not ADDRESS=FD", Env, pair)
		}
		fd, err := strconv.Atoi(pair[i+1:])
		if err != nil || fd < 3 {
			return nil, fmt.Errorf("%s: %q: the descriptor must be a number of 3 or more", Env, pair)
		}
		if _, dup := fds[pair[:i]]; dup {
			return nil, fmt.Errorf("%s: %s is named twice", Env, pair[:i])
		}
		fds[pair[:i]] = fd
	}
	for _, fd := range fds {
		syscall.CloseOnExec(fd)
	}
	return &table{fds: fds}, nil
}
