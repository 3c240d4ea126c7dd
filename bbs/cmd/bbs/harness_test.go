package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
)

// bbsBinary is the bbs command, built once by TestMain.
var bbsBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bbs-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bbsBinary = filepath.Join(dir, "bbs")
	build := exec.Command("go", "build", "-o", bbsBinary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building bbs:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// certSet is a dev CA with its BBS and client certificates in a directory.
type certSet struct{ dir string }

func newCertSet(t *testing.T) certSet {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	return certSet{dir: dir}
}

func (c certSet) path(name string) string { return filepath.Join(c.dir, name) }

// server is the tls block of a BBS configuration.
func (c certSet) server() tlsconfig.Files {
	return tlsconfig.Files{CAFile: c.path("ca.crt"), CertFile: c.path("bbs.crt"), KeyFile: c.path("bbs.key")}
}

// client is a TLS configuration presenting the client certificate.
func (c certSet) client(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := tlsconfig.Files{CAFile: c.path("ca.crt"), CertFile: c.path("client.crt"), KeyFile: c.path("client.key")}.Client()
	require.NoError(t, err)
	return cfg
}

// freeAddress returns a loopback address with a port the OS just handed out.
func freeAddress(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	return lis.Addr().String()
}

// testConfig is a complete BBS configuration on free ports.
func testConfig(t *testing.T, databaseURL string, certs certSet) map[string]any {
	return map[string]any{
		"grpc_address":     freeAddress(t),
		"http_address":     freeAddress(t),
		"debug_address":    freeAddress(t),
		"database_url":     databaseURL,
		"tls":              certs.server(),
		"encryption_keys":  map[string]string{"k1": "a passphrase for tests"},
		"active_key_label": "k1",
		"log_level":        "debug",
	}
}

func writeConfig(t *testing.T, cfg any) string {
	t.Helper()
	data, err := json.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bbs.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// lockedBuffer collects a process's output from its copying goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// bbsProcess is a running bbs binary.
type bbsProcess struct {
	cmd    *exec.Cmd
	output *lockedBuffer
	exited chan struct{}
	err    error // the Wait error, once exited is closed
}

// startBBS runs the binary with args; the process is killed at cleanup if still running.
func startBBS(t *testing.T, args ...string) *bbsProcess {
	t.Helper()
	p := &bbsProcess{cmd: exec.Command(bbsBinary, args...), output: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("bbs output:\n%s", p.output.String())
		}
	})
	return p
}

// waitExit waits up to timeout for the process to exit and returns its exit code.
func (p *bbsProcess) waitExit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		t.Fatalf("bbs still running after %s", timeout)
	}
	var exitErr *exec.ExitError
	if errors.As(p.err, &exitErr) {
		return exitErr.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

func (p *bbsProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// logMessages returns the "msg" of every JSON log line the process wrote.
func (p *bbsProcess) logMessages() []string {
	var messages []string
	for _, line := range bytes.Split([]byte(p.output.String()), []byte("\n")) {
		var record struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(line, &record) == nil && record.Msg != "" {
			messages = append(messages, record.Msg)
		}
	}
	return messages
}

// dial connects to a gRPC address with the given client TLS configuration.
func dial(t *testing.T, addr string, tlsConfig *tls.Config) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig)))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// waitServing polls the overall health status until SERVING, failing early if the
// process exits.
func (p *bbsProcess) waitServing(t *testing.T, conn *grpc.ClientConn, timeout time.Duration) {
	t.Helper()
	health := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("bbs exited before serving: %v", p.err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("bbs not SERVING after %s (last: %v, %v)", timeout, resp.GetStatus(), err)
		}
	}
}

// httpsClient is an HTTP client with the given TLS configuration.
func httpsClient(tlsConfig *tls.Config) *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true},
	}
}
