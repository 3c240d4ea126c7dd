package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"drover.dev/executor"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/identifiers"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// errRuntimeClosed ends waits of processes when the runtime closes.
var errRuntimeClosed = errors.New("containerd runtime closed")

// processTarget is what a new process in a running container starts from.
type processTarget struct {
	task containerd.Task
	// base is the container's own process, whose settings a new process inherits.
	base *specs.Process
	// userName and dir are the requested ones, or the image's USER and WORKDIR.
	userName, dir string
	user          containerUser
}

// processTarget loads guid's task and spec, applies the image's defaults to user and dir
// (an instance of a docker image runs as its USER in its WORKDIR unless told), and
// resolves the user in the container's own /etc/passwd and /etc/group.
func (r *Runtime) processTarget(ctx context.Context, guid, user, dir string) (processTarget, error) {
	ctr, task, err := r.loadTask(ctx, guid)
	if err != nil {
		return processTarget{}, err
	}
	cspec, err := ctr.Spec(ctx)
	if err != nil {
		return processTarget{}, fmt.Errorf("container spec of %s: %w", guid, err)
	}
	cfs, err := openContainerFS(ctx, guid, task)
	if err != nil {
		return processTarget{}, err
	}
	defer cfs.Close()
	cmeta, _, err := r.state.readContainerMeta(guid)
	if err != nil {
		return processTarget{}, fmt.Errorf("container meta of %s: %w", guid, err)
	}
	user, dir = processDefaults(user, dir, cmeta.Image)
	u, err := resolveUserIn(cfs, user)
	if err != nil {
		return processTarget{}, err
	}
	return processTarget{task: task, base: cspec.Process, userName: user, dir: dir, user: u}, nil
}

// Exec starts a process in the container. Its stdout and stderr go to two files under
// the state dir, written by a logger process of the shim (see outputLogger), so the
// process outlives the rep and never blocks on it; tailers copy them to spec.Stdout and
// spec.Stderr.
func (r *Runtime) Exec(ctx context.Context, guid string, spec executor.ProcessSpec) (executor.Process, error) {
	ctx = r.nsCtx(ctx)
	if err := identifiers.Validate(spec.ID); err != nil {
		return nil, fmt.Errorf("process id: %w", err)
	}
	if spec.Path == "" {
		return nil, errors.New("process path: required")
	}
	target, err := r.processTarget(ctx, guid, spec.User, spec.Dir)
	if err != nil {
		return nil, err
	}
	task, user := target.task, target.user
	spec.User, spec.Dir = target.userName, target.dir
	stdoutPath, stderrPath := r.state.stdout(guid, spec.ID), r.state.stderr(guid, spec.ID)
	for _, path := range []string{stdoutPath, stderrPath} {
		if err := createLogFile(path); err != nil {
			return nil, err
		}
	}
	meta := processMeta{ID: spec.ID, OOMKillsAtStart: r.oomKills(ctx, guid, task)}
	if err := writeJSON(r.state.processMeta(guid, spec.ID), meta); err != nil {
		return nil, fmt.Errorf("write process meta: %w", err)
	}
	p, err := task.Exec(ctx, spec.ID, processSpec(target.base, spec, user), outputLogger(stdoutPath, stderrPath))
	if err != nil {
		return nil, fmt.Errorf("exec %s in %s: %w", spec.ID, guid, err)
	}
	statusC, err := p.Wait(r.ctx)
	if err == nil {
		err = p.Start(ctx)
	}
	if err != nil {
		cctx, cancel := r.cleanupCtx(ctx)
		defer cancel()
		_, _ = p.Delete(cctx, containerd.WithProcessKill)
		return nil, fmt.Errorf("start %s in %s: %w", spec.ID, guid, err)
	}
	return r.track(guid, task, p, statusC, meta, spec.Stdout, spec.Stderr, false), nil
}

// Reattach finds a process started by an earlier runtime and streams its output from
// now on.
func (r *Runtime) Reattach(ctx context.Context, guid, processID string, stdout, stderr io.Writer) (executor.Process, error) {
	ctx = r.nsCtx(ctx)
	_, task, err := r.loadTask(ctx, guid)
	if err != nil {
		return nil, err
	}
	p, err := task.LoadProcess(ctx, processID, nil)
	if err != nil {
		return nil, fmt.Errorf("process %s in %s: %w", processID, guid, err)
	}
	meta := processMeta{ID: processID}
	if err := readJSON(r.state.processMeta(guid, processID), &meta); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	statusC, err := p.Wait(r.ctx)
	if err != nil {
		return nil, fmt.Errorf("wait for %s in %s: %w", processID, guid, err)
	}
	return r.track(guid, task, p, statusC, meta, stdout, stderr, true), nil
}

// process is an exec'd process being waited for.
type process struct {
	id   string
	proc containerd.Process
	done chan struct{}
	exit executor.ProcessExit
	err  error
}

// track tails the process's logs and waits for its exit in the background.
func (r *Runtime) track(guid string, task containerd.Task, p containerd.Process, statusC <-chan containerd.ExitStatus,
	meta processMeta, stdout, stderr io.Writer, fromEnd bool) *process {
	proc := &process{id: meta.ID, proc: p, done: make(chan struct{})}
	outT := startTailer(r.ctx, r.state.stdout(guid, meta.ID), stdout, fromEnd)
	errT := startTailer(r.ctx, r.state.stderr(guid, meta.ID), stderr, fromEnd)
	go func() {
		defer close(proc.done)
		select {
		case <-r.ctx.Done():
			proc.err = errRuntimeClosed
			return
		case st := <-statusC:
			code, _, err := st.Result()
			if err != nil {
				proc.err = fmt.Errorf("wait for %s in %s: %w", meta.ID, guid, err)
			}
			proc.exit.Code = int(code)
			proc.exit.OOMKilled = code != 0 && r.oomKills(r.ctx, guid, task) > meta.OOMKillsAtStart
			// Delete waits for the shim to finish copying the output.
			cctx, cancel := r.cleanupCtx(r.ctx)
			if _, err := p.Delete(cctx); err != nil && !errdefs.IsNotFound(err) {
				r.logger.Debug("delete-exited-process-failed", "guid", guid, "process", meta.ID, "error", err)
			}
			cancel()
		}
		outT.Stop()
		errT.Stop()
	}()
	return proc
}

// ID is the process's id.
func (p *process) ID() string { return p.id }

// Wait blocks until the process exits or ctx ends.
func (p *process) Wait(ctx context.Context) (executor.ProcessExit, error) {
	select {
	case <-ctx.Done():
		return executor.ProcessExit{}, ctx.Err()
	case <-p.done:
		return p.exit, p.err
	}
}

// Signal sends sig to the process.
func (p *process) Signal(ctx context.Context, sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	err := p.proc.Kill(ctx, sig)
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// maxUserFileBytes bounds how much of the container's /etc/passwd and /etc/group is read.
const maxUserFileBytes = 4 << 20

// resolveUserIn resolves user against the container's /etc/passwd and /etc/group, both
// opened inside its root.
func resolveUserIn(cfs *containerFS, user string) (containerUser, error) {
	open := func(name string) io.ReadCloser {
		f, err := cfs.openReadable(name)
		if err != nil {
			return nil
		}
		return struct {
			io.Reader
			io.Closer
		}{io.LimitReader(f, maxUserFileBytes), f}
	}
	passwd, group := open("/etc/passwd"), open("/etc/group")
	defer closeAll(passwd, group)
	return resolveUser(user, readerOrNil(passwd), readerOrNil(group))
}

func readerOrNil(rc io.ReadCloser) io.Reader {
	if rc == nil {
		return nil
	}
	return rc
}

func closeAll(cs ...io.ReadCloser) {
	for _, c := range cs {
		if c != nil {
			c.Close()
		}
	}
}

// outputLogger makes the shim hand a process's stdout and stderr to a small logger
// process of its own (the host's sh with two cats), which appends each stream to its
// file. The logger belongs to the shim, so the output keeps flowing when the rep is
// gone; and unlike the shim's file:// mode (one file for both streams, whose copier
// closes the file when stdout ends and loses stderr's last bytes) the streams stay apart.
// The shim waits for the logger when the process is deleted, so the files are complete
// by then. Protocol: fd 3 is stdout, fd 4 stderr, closing fd 5 says ready.
func outputLogger(stdoutPath, stderrPath string) cio.Creator {
	script := fmt.Sprintf("/bin/cat <&3 >>%s 4<&- 5>&- &\n/bin/cat <&4 >>%s 3<&- 5>&- &\nexec 3<&- 4<&- 5>&-\nwait\n",
		shellQuote(stdoutPath), shellQuote(stderrPath))
	return cio.BinaryIO("/bin/sh", map[string]string{"-c": script})
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// createLogFile creates (empty) the file the shim appends a process's output to.
func createLogFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create log file: %w", err)
	}
	return f.Close()
}
