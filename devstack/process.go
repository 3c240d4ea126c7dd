package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"drover.dev/lib/handover"
)

// pollInterval is how often waits re-check a condition.
const pollInterval = 50 * time.Millisecond

// killTimeout bounds the wait for a process to vanish after SIGKILL.
const killTimeout = 10 * time.Second

// process is a started program: either a child of this process (done closes when it has
// been reaped) or one found through its pid file (done is nil).
type process struct {
	pid int
	// marker is a string its command line contains, so that a recycled pid is not taken
	// for it.
	marker string
	done   chan struct{}
	err    error
}

// spawn starts path with args, its output appended to the two log files. A detached
// process gets its own session and outlives this one; an attached one is killed when
// this process dies. The listeners of pass are handed to the child (lib/handover) and
// closed here.
func spawn(path string, args []string, marker, stdoutPath, stderrPath string, detached bool, pass []*handover.Reservation) (*process, error) {
	stdout, err := os.OpenFile(stdoutPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(stderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	release, err := handover.Pass(cmd, pass...)
	if err != nil {
		return nil, err
	}
	err = cmd.Start()
	release()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	p := &process{pid: cmd.Process.Pid, marker: marker, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// adopt returns the process named by pid when it is alive and its command line holds marker.
func adopt(pid int, marker string) *process {
	p := &process{pid: pid, marker: marker}
	if !p.alive() {
		return nil
	}
	return p
}

// alive reports whether the process still runs (a zombie does not).
func (p *process) alive() bool {
	if p.done != nil {
		select {
		case <-p.done:
			return false
		default:
			return true
		}
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline")
	return err == nil && strings.Contains(string(cmdline), p.marker)
}

// exited returns a channel that closes when the process is gone.
func (p *process) exited() <-chan struct{} {
	if p.done != nil {
		return p.done
	}
	ch := make(chan struct{})
	go func() {
		for p.alive() {
			time.Sleep(pollInterval)
		}
		close(ch)
	}()
	return ch
}

// signal sends sig; a process that is already gone is not an error.
func (p *process) signal(sig syscall.Signal) error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %d: %w", p.pid, err)
	}
	return nil
}

// kill sends SIGKILL and waits until the process is gone.
func (p *process) kill(ctx context.Context) error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.exited():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pid %d did not die after SIGKILL: %w", p.pid, ctx.Err())
	}
}

// stop sends SIGTERM, waits up to grace, then kills.
func (p *process) stop(ctx context.Context, grace time.Duration) error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited():
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	return p.kill(kctx)
}
