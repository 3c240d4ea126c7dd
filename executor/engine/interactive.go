package engine

import (
	"context"
	"errors"
	"fmt"

	"drover.dev/executor"
)

// ExecInteractive starts an operator's process in a running container.
func (e *Executor) ExecInteractive(ctx context.Context, guid string, spec executor.InteractiveSpec) (executor.InteractiveProcess, error) {
	if len(spec.Args) == 0 || spec.Args[0] == "" {
		return nil, errors.New("args: the command is required")
	}
	e.mu.Lock()
	n, ok := e.nodes[guid]
	var state executor.State
	created := false
	if ok {
		state, created = n.c.State, n.created
	}
	e.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", executor.ErrContainerNotFound, guid)
	}
	if state != executor.StateRunning || !created {
		return nil, fmt.Errorf("%w: container %s is %s, not running", executor.ErrInvalidStateTransition, guid, state)
	}
	return e.rt.ExecInteractive(ctx, guid, spec)
}
