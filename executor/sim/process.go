package sim

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"drover.dev/executor"
)

// process is a simulated process: it ends when signalled, when its container goes, or
// at once when scripted to.
type process struct {
	id     string
	spec   executor.ProcessSpec
	once   sync.Once
	done   chan struct{}
	code   int
	mu     sync.Mutex
	sigs   []syscall.Signal
	ignore bool // ignores SIGTERM (args contain "trap-term")
}

func (p *process) exit(code int) {
	p.once.Do(func() {
		p.code = code
		close(p.done)
	})
}

// ID is the process ID.
func (p *process) ID() string { return p.id }

// Wait blocks until the process ends or ctx ends.
func (p *process) Wait(ctx context.Context) (executor.ProcessExit, error) {
	select {
	case <-p.done:
		return executor.ProcessExit{Code: p.code}, nil
	case <-ctx.Done():
		return executor.ProcessExit{}, ctx.Err()
	}
}

// Signal ends the process: SIGTERM with 143 (unless it traps it), SIGKILL with 137.
func (p *process) Signal(ctx context.Context, sig syscall.Signal) error {
	p.mu.Lock()
	p.sigs = append(p.sigs, sig)
	p.mu.Unlock()
	switch {
	case sig == syscall.SIGKILL:
		p.exit(137)
	case sig == syscall.SIGTERM && !p.ignore:
		p.exit(143)
	}
	return nil
}

// scriptedExit reads the exit a process is scripted to make at once: Path "false"
// exits 1, "true" exits 0, and args holding "exit N" (in one arg or two) exit N.
func scriptedExit(spec executor.ProcessSpec) (int, bool) {
	switch spec.Path {
	case "false":
		return 1, true
	case "true":
		return 0, true
	}
	words := strings.Fields(strings.Join(spec.Args, " "))
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "exit" {
			if n, err := strconv.Atoi(strings.TrimRight(words[i+1], ";")); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// Exec starts a simulated process. Args containing "echo WORD" write WORD to stdout;
// "trap-term" makes it ignore SIGTERM.
func (r *Runtime) Exec(ctx context.Context, guid string, spec executor.ProcessSpec) (executor.Process, error) {
	r.mu.Lock()
	c, err := r.get(guid)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	if old, ok := c.procs[spec.ID]; ok {
		select {
		case <-old.done:
		default:
			r.mu.Unlock()
			return nil, fmt.Errorf("process %s already running in %s", spec.ID, guid)
		}
	}
	joined := strings.Join(spec.Args, " ")
	p := &process{id: spec.ID, spec: spec, done: make(chan struct{}), ignore: strings.Contains(joined, "trap-term")}
	c.procs[spec.ID] = p
	r.mu.Unlock()

	if w := spec.Stdout; w != nil {
		words := strings.Fields(joined)
		for i := 0; i+1 < len(words); i++ {
			if words[i] == "echo" {
				_, _ = io.WriteString(w, strings.TrimRight(words[i+1], ";")+"\n")
			}
		}
	}
	if code, ok := scriptedExit(spec); ok {
		p.exit(code)
	}
	return p, nil
}

// Reattach finds a process that is still running.
func (r *Runtime) Reattach(ctx context.Context, guid, processID string, stdout, stderr io.Writer) (executor.Process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.get(guid)
	if err != nil {
		return nil, err
	}
	p, ok := c.procs[processID]
	if !ok {
		return nil, fmt.Errorf("process %s not found in %s", processID, guid)
	}
	select {
	case <-p.done:
		return nil, fmt.Errorf("process %s in %s has exited", processID, guid)
	default:
	}
	return p, nil
}

// Processes returns the IDs of the running processes of a container (a test helper).
func (r *Runtime) Processes(guid string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[guid]
	if !ok {
		return nil
	}
	var out []string
	for id, p := range c.procs {
		select {
		case <-p.done:
		default:
			out = append(out, id)
		}
	}
	return out
}

// ProcessSpec returns the spec a process was started with (a test helper).
func (r *Runtime) ProcessSpec(guid, id string) (executor.ProcessSpec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[guid]
	if !ok {
		return executor.ProcessSpec{}, false
	}
	p, ok := c.procs[id]
	if !ok {
		return executor.ProcessSpec{}, false
	}
	return p.spec, true
}

// Signals returns the signals a process received (a test helper).
func (r *Runtime) Signals(guid, id string) []syscall.Signal {
	r.mu.Lock()
	c, ok := r.containers[guid]
	var p *process
	if ok {
		p = c.procs[id]
	}
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]syscall.Signal(nil), p.sigs...)
}
