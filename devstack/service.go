package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"drover.dev/lib/handover"
)

// StopGrace is how long a process has to exit after SIGTERM before it is killed.
const StopGrace = 15 * time.Second

// Service is one program of a stack (a BBS, the auctioneer, a rep): its directory, its
// binary and, while it runs, its process. Its files live in Dir: config.json,
// <binary>.pid, stdout.log, stderr.log. The typed components embed it.
type Service struct {
	Name   string `json:"name"`
	Dir    string `json:"dir"`
	Binary string `json:"binary"`
	// Detached services outlive the process that started them (the dev stack); attached
	// ones die with it (tests).
	Detached bool `json:"detached"`
	// ConfigArgs, when set, are the arguments that come before the configuration file's
	// path (e.g. "serve" for docker-registry); by default it is "-config".
	ConfigArgs []string `json:"config_args,omitempty"`
	// Netns, when set, is the network namespace of the test host the service runs on
	// (multi-host stacks, see PlaceOnHosts); empty: the caller's.
	Netns string `json:"netns,omitempty"` // multihost

	mu   sync.Mutex
	proc *process
	// reserved holds the listeners of the service's ports (PassListeners) until its
	// next start hands them to the process.
	reserved []*handover.Reservation
	// logStart is the size of stdout.log when the service was last started (the log is
	// appended to), so that LoggedSinceStart looks at this run's lines only.
	logStart int64
}

// PassListeners gives the service the listeners of its reserved ports (lib/handover):
// its next start hands them to the process, so that no other process can take a port
// in between (a test stack reserves its free ports this way).
func (s *Service) PassListeners(reserved ...*handover.Reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved = reserved
}

// ConfigPath is the service's configuration file.
func (s *Service) ConfigPath() string { return filepath.Join(s.Dir, "config.json") }

// PidPath is the file holding the pid of the running service.
func (s *Service) PidPath() string {
	return filepath.Join(s.Dir, filepath.Base(s.Binary)+".pid")
}

// StdoutPath is the service's standard output (its JSON log lines).
func (s *Service) StdoutPath() string { return filepath.Join(s.Dir, "stdout.log") }

// StderrPath is the service's standard error.
func (s *Service) StderrPath() string { return filepath.Join(s.Dir, "stderr.log") }

// start writes config, starts the binary with -config and waits until ready passes (at
// most timeout, or ctx's deadline). A service that fails to come up is killed and the
// error carries the end of its logs.
func (s *Service) start(ctx context.Context, config any, timeout time.Duration, ready func(context.Context) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current() != nil {
		return fmt.Errorf("%s is already running", s.Name)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	if err := writeConfig(s.ConfigPath(), config); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	s.logStart = 0
	if fi, err := os.Stat(s.StdoutPath()); err == nil {
		s.logStart = fi.Size()
	}
	pass := s.reserved
	s.reserved = nil
	args := []string{"-config", s.ConfigPath()}
	if len(s.ConfigArgs) > 0 {
		args = append(append([]string(nil), s.ConfigArgs...), s.ConfigPath())
	}
	path, args := s.command(args) // multihost: nsenter into the host's netns
	proc, err := spawn(path, args, s.ConfigPath(), s.StdoutPath(), s.StderrPath(), s.Detached, pass)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	s.proc = proc
	if err := os.WriteFile(s.PidPath(), []byte(strconv.Itoa(proc.pid)+"\n"), 0o644); err != nil {
		s.killLocked(ctx)
		return fmt.Errorf("%s: write pid file: %w", s.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := waitReady(ctx, proc, ready); err != nil {
		s.killLocked(context.WithoutCancel(ctx))
		return fmt.Errorf("%s did not become healthy: %w\n%s", s.Name, err, s.LogTail(40))
	}
	return nil
}

// LoggedSinceStart reports whether the service wrote text to stdout.log since it was
// last started.
func (s *Service) LoggedSinceStart(text string) bool {
	f, err := os.Open(s.StdoutPath())
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(s.logStart, io.SeekStart); err != nil {
		return false
	}
	data, err := io.ReadAll(f)
	return err == nil && bytes.Contains(data, []byte(text))
}

// Stop sends SIGTERM and waits for the service to exit, killing it after StopGrace.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	proc := s.current()
	if proc == nil {
		return nil
	}
	if err := proc.stop(ctx, StopGrace); err != nil {
		return fmt.Errorf("stop %s: %w", s.Name, err)
	}
	s.forget()
	return nil
}

// Kill sends SIGKILL (as a crash would) and waits until the service is gone.
func (s *Service) Kill(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killLocked(ctx)
}

// Running reports whether the service's process is alive.
func (s *Service) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current() != nil
}

// Pid is the running service's pid, 0 when it does not run.
func (s *Service) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if proc := s.current(); proc != nil {
		return proc.pid
	}
	return 0
}

// LogTail returns the last n lines of the service's stdout and stderr logs.
func (s *Service) LogTail(n int) string {
	var out strings.Builder
	for _, path := range []string{s.StdoutPath(), s.StderrPath()} {
		data, err := os.ReadFile(path)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&out, "--- %s (last %d lines)\n%s\n", path, len(lines), strings.Join(lines, "\n"))
	}
	return out.String()
}

// current returns the live process: the one this value started, or the one its pid file
// names (started by another devstack process). Callers hold mu.
func (s *Service) current() *process {
	if s.proc != nil && s.proc.alive() {
		return s.proc
	}
	s.proc = nil
	data, err := os.ReadFile(s.PidPath())
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return nil
	}
	s.proc = adopt(pid, s.ConfigPath())
	return s.proc
}

func (s *Service) killLocked(ctx context.Context) error {
	proc := s.current()
	if proc == nil {
		return nil
	}
	if err := proc.kill(ctx); err != nil {
		return fmt.Errorf("kill %s: %w", s.Name, err)
	}
	s.forget()
	return nil
}

// forget drops the dead process and its pid file. Callers hold mu.
func (s *Service) forget() {
	s.proc = nil
	os.Remove(s.PidPath())
}

// waitReady polls ready until it passes, the process exits, or ctx ends.
func waitReady(ctx context.Context, proc *process, ready func(context.Context) error) error {
	exited := proc.exited()
	for {
		err := ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			if proc.err != nil {
				return fmt.Errorf("the process exited (%v) before it was healthy", proc.err)
			}
			return errors.New("the process exited before it was healthy")
		case <-ctx.Done():
			return fmt.Errorf("%w (last health check: %v)", ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}
