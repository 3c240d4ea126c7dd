package devstack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	bbsconfig "drover.dev/bbs/config"
)

// Timeouts of a BBS's life.
const (
	// StartTimeout bounds the wait for a new BBS to become healthy (it migrates first).
	StartTimeout = 90 * time.Second
	// StopGrace is how long a BBS has to exit after SIGTERM before it is killed.
	StopGrace = 15 * time.Second
	// healthAttemptTimeout bounds one health check.
	healthAttemptTimeout = 2 * time.Second
)

// BBS is one BBS process of a stack: its files, its configuration and, while it runs,
// its process. Its files live in Dir: config.json, bbs.pid, stdout.log, stderr.log.
type BBS struct {
	Name   string           `json:"name"`
	Dir    string           `json:"dir"`
	Binary string           `json:"binary"`
	Config bbsconfig.Config `json:"config"`
	Certs  Certs            `json:"certs"`
	// Detached BBSes outlive the process that started them (the dev stack); attached ones
	// die with it (tests).
	Detached bool `json:"detached"`

	mu   sync.Mutex
	proc *process
}

// ConfigPath is the BBS's configuration file.
func (b *BBS) ConfigPath() string { return filepath.Join(b.Dir, "config.json") }

// PidPath is the file holding the pid of the running BBS.
func (b *BBS) PidPath() string { return filepath.Join(b.Dir, "bbs.pid") }

// StdoutPath is the BBS's standard output (its JSON log lines).
func (b *BBS) StdoutPath() string { return filepath.Join(b.Dir, "stdout.log") }

// StderrPath is the BBS's standard error.
func (b *BBS) StderrPath() string { return filepath.Join(b.Dir, "stderr.log") }

// GRPCAddress is host:port of the BBS's gRPC server.
func (b *BBS) GRPCAddress() string { return b.Config.GRPCAddress }

// HTTPURL is the base URL of the BBS's HTTPS API.
func (b *BBS) HTTPURL() string { return "https://" + b.Config.HTTPAddress }

// DebugURL is the base URL of the BBS's debug server (/metrics, /healthz).
func (b *BBS) DebugURL() string { return "http://" + b.Config.DebugAddress }

// Start writes the configuration, starts the BBS and waits until it is Healthy (at most
// StartTimeout, or ctx's deadline). A BBS that fails to come up is killed and
// the error carries the end of its logs.
func (b *BBS) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.current() != nil {
		return fmt.Errorf("%s is already running", b.Name)
	}
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", b.Name, err)
	}
	if err := writeConfig(b.ConfigPath(), b.Config); err != nil {
		return fmt.Errorf("%s: %w", b.Name, err)
	}
	proc, err := spawn(b.Binary, []string{"-config", b.ConfigPath()}, b.ConfigPath(), b.StdoutPath(), b.StderrPath(), b.Detached)
	if err != nil {
		return fmt.Errorf("%s: %w", b.Name, err)
	}
	b.proc = proc
	if err := os.WriteFile(b.PidPath(), []byte(strconv.Itoa(proc.pid)+"\n"), 0o644); err != nil {
		b.killLocked(ctx)
		return fmt.Errorf("%s: write pid file: %w", b.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	if err := b.waitHealthy(ctx, proc); err != nil {
		b.killLocked(context.WithoutCancel(ctx))
		return fmt.Errorf("%s did not become healthy: %w\n%s", b.Name, err, b.LogTail(40))
	}
	return nil
}

// Stop sends SIGTERM and waits for the BBS to exit, killing it after StopGrace.
func (b *BBS) Stop(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	proc := b.current()
	if proc == nil {
		return nil
	}
	if err := proc.stop(ctx, StopGrace); err != nil {
		return fmt.Errorf("stop %s: %w", b.Name, err)
	}
	b.forget()
	return nil
}

// Kill sends SIGKILL (as a crash would) and waits until the BBS is gone.
func (b *BBS) Kill(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.killLocked(ctx)
}

// Restart stops the BBS if it runs and starts it again with the same configuration.
func (b *BBS) Restart(ctx context.Context) error {
	if err := b.Stop(ctx); err != nil {
		return err
	}
	return b.Start(ctx)
}

// Running reports whether the BBS process is alive.
func (b *BBS) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.current() != nil
}

// Pid is the running BBS's pid, 0 when it does not run.
func (b *BBS) Pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if proc := b.current(); proc != nil {
		return proc.pid
	}
	return 0
}

// Healthy reports whether the BBS is ready: its gRPC health check answers SERVING and
// its debug server, the last part it starts (after HTTPS), answers /healthz.
func (b *BBS) Healthy(ctx context.Context) error {
	tlsConf, err := b.Certs.ClientTLS()
	if err != nil {
		return err
	}
	return b.checkReady(ctx, tlsConf)
}

func (b *BBS) checkReady(ctx context.Context, tlsConf *tls.Config) error {
	if err := checkHealth(ctx, b.GRPCAddress(), tlsConf); err != nil {
		return err
	}
	return checkHTTP(ctx, b.DebugURL()+"/healthz")
}

// LogTail returns the last n lines of the BBS's stdout and stderr logs.
func (b *BBS) LogTail(n int) string {
	var out strings.Builder
	for _, path := range []string{b.StdoutPath(), b.StderrPath()} {
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
func (b *BBS) current() *process {
	if b.proc != nil && b.proc.alive() {
		return b.proc
	}
	b.proc = nil
	data, err := os.ReadFile(b.PidPath())
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return nil
	}
	b.proc = adopt(pid, b.ConfigPath())
	return b.proc
}

func (b *BBS) killLocked(ctx context.Context) error {
	proc := b.current()
	if proc == nil {
		return nil
	}
	if err := proc.kill(ctx); err != nil {
		return fmt.Errorf("kill %s: %w", b.Name, err)
	}
	b.forget()
	return nil
}

// forget drops the dead process and its pid file. Callers hold mu.
func (b *BBS) forget() {
	b.proc = nil
	os.Remove(b.PidPath())
}

// waitHealthy polls checkReady until it passes, the process exits, or ctx ends.
func (b *BBS) waitHealthy(ctx context.Context, proc *process) error {
	tlsConf, err := b.Certs.ClientTLS()
	if err != nil {
		return err
	}
	exited := proc.exited()
	for {
		err = b.checkReady(ctx, tlsConf)
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

// checkHealth asks address's grpc.health.v1 service for the server's overall status.
func checkHealth(ctx context.Context, address string, tlsConf *tls.Config) error {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, healthAttemptTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health status %s", resp.GetStatus())
	}
	return nil
}

// checkHTTP requires a 200 answer from a plain HTTP GET of url.
func checkHTTP(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, healthAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
