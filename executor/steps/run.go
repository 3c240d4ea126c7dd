package steps

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// runStep runs one process (RunAction).
type runStep struct {
	deps   *Deps
	model  *modelsv1.RunAction
	id     string
	source string
}

type waitResult struct {
	exit executor.ProcessExit
	err  error
}

func (s *runStep) Run(ctx context.Context, ready func()) error {
	if ctx.Err() != nil {
		return ErrCancelled
	}
	stdout, stderr := io.Writer(io.Discard), io.Writer(io.Discard)
	if !s.model.GetSuppressLogOutput() {
		stdout = s.deps.writer(s.source, "stdout")
		stderr = s.deps.writer(s.source, "stderr")
	}
	defer flush(stdout)
	defer flush(stderr)

	proc, err := s.start(ctx, stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return ErrCancelled
		}
		return fmt.Errorf("%s: failed to start process %s: %w", s.source, s.id, err)
	}
	signalReady(ready)

	waitCtx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWait()
	done := make(chan waitResult, 1)
	go func() {
		exit, err := proc.Wait(waitCtx)
		done <- waitResult{exit, err}
	}()

	select {
	case r := <-done:
		return s.exited(r, stdout)
	case <-ctx.Done():
		return s.stop(waitCtx, proc, done)
	case <-s.deps.Detached:
		return ErrDetached
	}
}

// start execs the process, or finds it again after an executor restart.
func (s *runStep) start(ctx context.Context, stdout, stderr io.Writer) (executor.Process, error) {
	if s.deps.Reattach {
		return s.deps.Runtime.Reattach(ctx, s.deps.Guid, s.id, stdout, stderr)
	}
	env := make([]string, 0, len(s.model.GetEnv())+5)
	for _, e := range s.model.GetEnv() {
		env = append(env, e.GetName()+"="+e.GetValue())
	}
	env = append(env, NetworkEnv(s.deps.NetInfo)...)
	return s.deps.Runtime.Exec(ctx, s.deps.Guid, executor.ProcessSpec{
		ID:     s.id,
		Path:   s.model.GetPath(),
		Args:   s.model.GetArgs(),
		Dir:    s.model.GetDir(),
		Env:    env,
		User:   s.model.GetUser(),
		Nofile: s.model.GetResourceLimits().GetNofile(),
		Stdout: stdout,
		Stderr: stderr,
	})
}

// exited turns a process exit into the step's result.
func (s *runStep) exited(r waitResult, stdout io.Writer) error {
	if r.err != nil {
		return fmt.Errorf("%s: waiting for process %s: %w", s.source, s.id, r.err)
	}
	if r.exit.Code == 0 {
		return nil
	}
	msg := fmt.Sprintf("Exited with status %d", r.exit.Code)
	if r.exit.OOMKilled || s.deps.oomKilled() {
		msg += " (out of memory)"
	}
	if !s.deps.SuppressExitStatus {
		fmt.Fprintf(stdout, "Exit status %d\n", r.exit.Code)
	}
	return emittable(nil, "%s: %s", s.source, msg)
}

// stop sends SIGTERM, then SIGKILL after the grace period, and waits ExitTimeout more.
func (s *runStep) stop(ctx context.Context, proc executor.Process, done <-chan waitResult) error {
	grace := s.deps.gracePeriod()
	_ = proc.Signal(ctx, syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
		return ErrCancelled
	case <-timer.C:
	}
	_ = proc.Signal(ctx, syscall.SIGKILL)
	timer.Reset(ExitTimeout)
	select {
	case <-done:
		return fmt.Errorf("%w (exceeded %s graceful shutdown interval)", ErrCancelled, grace)
	case <-timer.C:
		return fmt.Errorf("%s: process %s did not exit %s after SIGKILL (exceeded %s graceful shutdown interval)", s.source, s.id, ExitTimeout, grace)
	}
}
