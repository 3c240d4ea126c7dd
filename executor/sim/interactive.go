package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"drover.dev/executor"
)

// interactive is a simulated operator process: it copies its input to its output (like
// cat) until the input ends, then exits 0, or at once with the code its args script
// ("exit N"); "echo WORD" in its args writes WORD first. Kill ends it with 137.
type interactive struct {
	spec    executor.InteractiveSpec
	mu      sync.Mutex
	resizes []executor.TerminalSize
	once    sync.Once
	exited  chan struct{} // closed when the process has exited
	done    chan struct{} // closed when its output is delivered
	code    int
}

func (p *interactive) exit(code int) {
	p.once.Do(func() {
		p.code = code
		close(p.exited)
	})
}

// ExecInteractive starts a simulated operator process in a container.
func (r *Runtime) ExecInteractive(ctx context.Context, guid string, spec executor.InteractiveSpec) (executor.InteractiveProcess, error) {
	if len(spec.Args) == 0 {
		return nil, errors.New("args: required")
	}
	r.mu.Lock()
	c, err := r.get(guid)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	p := &interactive{spec: spec, exited: make(chan struct{}), done: make(chan struct{}),
		resizes: []executor.TerminalSize{spec.Size}}
	c.interactive = append(c.interactive, p)
	r.mu.Unlock()

	stdout := spec.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	words := strings.Fields(strings.Join(spec.Args, " "))
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "echo" {
			_, _ = io.WriteString(stdout, strings.TrimRight(words[i+1], ";")+"\n")
		}
	}
	if code, ok := scriptedExit(executor.ProcessSpec{Path: spec.Args[0], Args: spec.Args[1:]}); ok {
		p.exit(code)
		close(p.done)
		return p, nil
	}
	go func() {
		defer close(p.done)
		if spec.Stdin != nil {
			copied := make(chan struct{})
			go func() {
				defer close(copied)
				_, _ = io.Copy(stdout, spec.Stdin)
			}()
			select {
			case <-copied:
				p.exit(0)
			case <-p.exited:
			}
		}
		<-p.exited
	}()
	return p, nil
}

// Resize records the new size.
func (p *interactive) Resize(ctx context.Context, size executor.TerminalSize) error {
	if !p.spec.TTY {
		return fmt.Errorf("resize: the process has no terminal")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resizes = append(p.resizes, size)
	return nil
}

// Wait blocks until the process ends or ctx ends.
func (p *interactive) Wait(ctx context.Context) (executor.ProcessExit, error) {
	select {
	case <-p.done:
		return executor.ProcessExit{Code: p.code}, nil
	case <-ctx.Done():
		return executor.ProcessExit{}, ctx.Err()
	}
}

// Kill ends the process with 137.
func (p *interactive) Kill(ctx context.Context) error {
	p.exit(137)
	return nil
}

// InteractiveProcess describes an operator process of a container (a test helper).
type InteractiveProcess struct {
	Spec    executor.InteractiveSpec
	Resizes []executor.TerminalSize
	Running bool
}

// Interactives returns the operator processes started in a container, oldest first
// (a test helper).
func (r *Runtime) Interactives(guid string) []InteractiveProcess {
	r.mu.Lock()
	c, ok := r.containers[guid]
	var ps []*interactive
	if ok {
		ps = append(ps, c.interactive...)
	}
	r.mu.Unlock()
	out := make([]InteractiveProcess, 0, len(ps))
	for _, p := range ps {
		p.mu.Lock()
		ip := InteractiveProcess{Spec: p.spec, Resizes: append([]executor.TerminalSize(nil), p.resizes...)}
		p.mu.Unlock()
		select {
		case <-p.exited:
		default:
			ip.Running = true
		}
		out = append(out, ip)
	}
	return out
}
