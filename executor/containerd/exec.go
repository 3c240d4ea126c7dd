package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"drover.dev/executor"
	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// interactiveKillRounds bounds how often Kill looks again for processes that forked
// while it was stopping the ones it had found.
const interactiveKillRounds = 20

// ExecInteractive starts an operator's process (droverctl exec) in the container: its
// streams are copied through fifos by containerd's cio (a terminal when spec.TTY), and
// it is killed, with everything it started, when ctx ends or Kill is called. Unlike
// Exec's processes it leaves no files behind and is not adopted after a restart.
func (r *Runtime) ExecInteractive(ctx context.Context, guid string, spec executor.InteractiveSpec) (executor.InteractiveProcess, error) {
	if len(spec.Args) == 0 || spec.Args[0] == "" {
		return nil, errors.New("args: the command is required")
	}
	nctx := r.nsCtx(ctx)
	target, err := r.processTarget(nctx, guid, spec.User, spec.Dir)
	if err != nil {
		return nil, err
	}
	task := target.task
	spec.User, spec.Dir = target.userName, target.dir
	pspec := interactiveProcessSpec(target.base, spec, target.user)
	id := "exec-" + randomID()

	p := &interactiveProcess{guid: guid, id: id, task: task, tty: spec.TTY, done: make(chan struct{}), stdinEOF: make(chan struct{})}
	// Every stream gets a fifo (the shim refuses some combinations of absent ones): no
	// input is an empty one, no output is discarded; a terminal has no stderr.
	in := spec.Stdin
	if in == nil {
		in = strings.NewReader("")
	}
	stdout, stderr := orDiscard(spec.Stdout), orDiscard(spec.Stderr)
	opts := []cio.Opt{cio.WithStreams(&eofNotifier{r: in, eof: p.stdinEOF}, stdout, stderr)}
	if spec.TTY {
		opts = []cio.Opt{cio.WithStreams(&eofNotifier{r: in, eof: p.stdinEOF}, stdout, nil), cio.WithTerminal}
	}
	proc, err := task.Exec(nctx, id, pspec, cio.NewCreator(opts...))
	if err != nil {
		return nil, fmt.Errorf("exec in %s: %w", guid, err)
	}
	p.proc = proc
	statusC, err := proc.Wait(r.nsCtx(r.ctx))
	if err == nil {
		err = proc.Start(nctx)
	}
	if err != nil {
		cctx, cancel := r.cleanupCtx(nctx)
		defer cancel()
		_, _ = proc.Delete(cctx, containerd.WithProcessKill)
		return nil, fmt.Errorf("start in %s: %w", guid, err)
	}
	if spec.TTY && spec.Size.Rows > 0 && spec.Size.Columns > 0 {
		_ = proc.Resize(nctx, uint32(spec.Size.Columns), uint32(spec.Size.Rows))
	}
	go r.reapInteractive(p, statusC)
	go func() {
		select {
		case <-p.stdinEOF:
			cctx, cancel := r.cleanupCtx(nctx)
			defer cancel()
			if err := proc.CloseIO(cctx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
				r.logger.Debug("close-exec-stdin-failed", "guid", guid, "process", id, "error", err)
			}
		case <-p.done:
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			cctx, cancel := r.cleanupCtx(nctx)
			defer cancel()
			if err := p.Kill(cctx); err != nil {
				r.logger.Warn("kill-exec-failed", "guid", guid, "process", id, "error", err)
			}
		case <-p.done:
		}
	}()
	return p, nil
}

// reapInteractive waits for the process's exit, kills what it left in its session,
// then deletes it in containerd, which waits until its output is copied.
func (r *Runtime) reapInteractive(p *interactiveProcess, statusC <-chan containerd.ExitStatus) {
	defer close(p.done)
	select {
	case <-r.ctx.Done():
		p.err = errRuntimeClosed
		return
	case st := <-statusC:
		code, _, err := st.Result()
		if err != nil {
			p.err = fmt.Errorf("wait for %s in %s: %w", p.id, p.guid, err)
		}
		p.exit.Code = int(code)
	}
	cctx, cancel := r.cleanupCtx(r.ctx)
	defer cancel()
	p.killFamily(cctx)
	if _, err := p.proc.Delete(cctx); err != nil && !errdefs.IsNotFound(err) {
		r.logger.Debug("delete-exec-failed", "guid", p.guid, "process", p.id, "error", err)
	}
}

// interactiveProcessSpec derives an operator's process from the container's init
// process, like processSpec, with a terminal when asked for.
func interactiveProcessSpec(base *specs.Process, spec executor.InteractiveSpec, u containerUser) *specs.Process {
	out := processSpec(base, executor.ProcessSpec{Path: spec.Args[0], Args: spec.Args[1:], Dir: spec.Dir, Env: spec.Env}, u)
	if spec.TTY {
		out.Terminal = true
		if spec.Size.Rows > 0 && spec.Size.Columns > 0 {
			out.ConsoleSize = &specs.Box{Height: uint(spec.Size.Rows), Width: uint(spec.Size.Columns)}
		}
		if !hasEnv(out.Env, "TERM") {
			out.Env = append(out.Env, "TERM=xterm")
		}
	}
	return out
}

// orDiscard is w, or io.Discard when w is nil.
func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// hasEnv reports whether env sets name.
func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if n, _, _ := strings.Cut(kv, "="); n == name {
			return true
		}
	}
	return false
}

// randomID is 12 random hex digits.
func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

// eofNotifier closes eof when its reader ends (the process's input is then closed).
type eofNotifier struct {
	r    io.Reader
	eof  chan struct{}
	once sync.Once
}

func (e *eofNotifier) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}

// interactiveProcess is a running ExecInteractive.
type interactiveProcess struct {
	guid, id string
	task     containerd.Task
	proc     containerd.Process
	tty      bool
	stdinEOF chan struct{}
	done     chan struct{}
	exit     executor.ProcessExit
	err      error
}

// Resize changes the size of the process's terminal.
func (p *interactiveProcess) Resize(ctx context.Context, size executor.TerminalSize) error {
	if !p.tty {
		return errors.New("resize: the process has no terminal")
	}
	if size.Rows == 0 || size.Columns == 0 {
		return fmt.Errorf("resize: %dx%d is not a size", size.Columns, size.Rows)
	}
	return p.proc.Resize(ctx, uint32(size.Columns), uint32(size.Rows))
}

// Wait blocks until the process has exited and its output is copied, or ctx ends.
func (p *interactiveProcess) Wait(ctx context.Context) (executor.ProcessExit, error) {
	select {
	case <-ctx.Done():
		return executor.ProcessExit{}, ctx.Err()
	case <-p.done:
		return p.exit, p.err
	}
}

// Kill stops the process and every process of the container in its session or below
// it, then kills them all and waits for the process to be reaped.
func (p *interactiveProcess) Kill(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.killFamily(ctx)
	if err := p.proc.Kill(ctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsFailedPrecondition(err) {
		return fmt.Errorf("kill %s in %s: %w", p.id, p.guid, err)
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("kill %s in %s: %w", p.id, p.guid, ctx.Err())
	case <-p.done:
		return nil
	}
}

// killFamily SIGSTOPs the container's processes in the process's session or below it,
// looking again until no new one appears (so that forks cannot outrun it), then
// SIGKILLs them all. After the process has exited it finds what is left of its
// session: an exec leaves nothing behind.
func (p *interactiveProcess) killFamily(ctx context.Context) {
	stopped := map[uint32]bool{}
	for range interactiveKillRounds {
		infos, err := p.task.Pids(ctx)
		if err != nil {
			break
		}
		var pids []uint32
		for _, info := range infos {
			pids = append(pids, info.Pid)
		}
		found := false
		for _, pid := range familyOf(p.proc.Pid(), pids, readProcStat) {
			if !stopped[pid] {
				stopped[pid] = true
				found = true
				_ = syscall.Kill(int(pid), syscall.SIGSTOP)
			}
		}
		if !found {
			break
		}
	}
	for pid := range stopped {
		_ = syscall.Kill(int(pid), syscall.SIGKILL)
	}
}

// procStat is what familyOf needs of a process.
type procStat struct {
	PPid, Session uint32
}

// familyOf are those of pids that are root, descend from it, or belong to the session
// it leads, given each one's stat (unreadable ones are left out: they are gone).
func familyOf(root uint32, pids []uint32, stat func(pid uint32) (procStat, bool)) []uint32 {
	stats := map[uint32]procStat{}
	for _, pid := range pids {
		if st, ok := stat(pid); ok {
			stats[pid] = st
		}
	}
	in := map[uint32]bool{root: true}
	for pid, st := range stats {
		if st.Session == root {
			in[pid] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for pid, st := range stats {
			if !in[pid] && in[st.PPid] {
				in[pid] = true
				changed = true
			}
		}
	}
	var out []uint32
	for _, pid := range pids {
		if _, ok := stats[pid]; ok && in[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// readProcStat reads the ppid and session of pid from /proc/<pid>/stat (the fields
// after the ")" that ends the command name are state, ppid, pgrp, session).
func readProcStat(pid uint32) (procStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return procStat{}, false
	}
	ppid, err1 := strconv.ParseUint(f[1], 10, 32)
	sid, err2 := strconv.ParseUint(f[3], 10, 32)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{PPid: uint32(ppid), Session: uint32(sid)}, true
}
