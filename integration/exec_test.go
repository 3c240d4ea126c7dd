package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// execWait bounds each exec scenario's waits.
const execWait = 60 * time.Second

// execSession is one Exec stream to a rep, read in the background.
type execSession struct {
	stream repv1.RepService_ExecClient
	cancel context.CancelFunc
	mu     sync.Mutex
	out    bytes.Buffer
	exit   *int32
	err    error
	done   chan struct{}
}

func (e *execSession) output() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.out.String()
}

// waitOutput waits until the output contains want.
func (e *execSession) waitOutput(t *testing.T, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(e.output(), want) }, execWait, cellPoll,
		"exec output never contained %q; it is %q", want, e.output())
}

// wait waits for the stream's end and returns the exit status (nil if none) and error.
func (e *execSession) wait(t *testing.T) (*int32, error) {
	t.Helper()
	select {
	case <-e.done:
	case <-time.After(execWait):
		t.Fatal("the exec did not end")
	}
	return e.exit, e.err
}

func (e *execSession) send(t *testing.T, req *repv1.ExecRequest) {
	t.Helper()
	require.NoError(t, e.stream.Send(req))
}

// startExec opens an Exec stream to addr with the certificate files and sends start.
func startExec(t *testing.T, addr string, files tlsconfig.Files, start *repv1.ExecStart) *execSession {
	t.Helper()
	tlsConf, err := files.Client()
	require.NoError(t, err)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*execWait)
	t.Cleanup(cancel)
	stream, err := repv1.NewRepServiceClient(conn).Exec(ctx)
	require.NoError(t, err)
	e := &execSession{stream: stream, cancel: cancel, done: make(chan struct{})}
	// A refused stream may be closed before the send: its error is what Recv says.
	if err := stream.Send(&repv1.ExecRequest{Payload: &repv1.ExecRequest_Start{Start: start}}); err != nil && !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	go func() {
		defer close(e.done)
		for {
			resp, err := stream.Recv()
			e.mu.Lock()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					e.err = err
				}
				e.mu.Unlock()
				return
			}
			e.out.Write(resp.GetStdout())
			e.out.Write(resp.GetStderr())
			if p, ok := resp.GetPayload().(*repv1.ExecResponse_ExitStatus); ok {
				code := p.ExitStatus
				e.exit = &code
			}
			e.mu.Unlock()
		}
	}()
	return e
}

// execProcesses are the host pids of an instance's processes whose command line holds
// marker.
func execProcesses(instanceGuid, marker string) []int {
	var out []int
	for _, pid := range instancePids(instanceGuid, "") {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), marker) {
			out = append(out, pid)
		}
	}
	return out
}

// droverctlExec runs droverctl with args and stdin; it returns stdout, stderr and the exit code.
func droverctlExec(t *testing.T, cs *cellStack, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), execWait)
	defer cancel()
	cmd := droverctlCommand(t, ctx, cs.Stack, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	t.Logf("droverctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), code
}

// TestExec is issue 17's acceptance 4: droverctl exec runs a process in a running
// instance (a shell with a terminal that follows resizes, a command whose exit status
// comes back), only for the operator identity and an LRP that allows it, never
// outliving its client, and every exec is an exec_started event and a rep log line.
func TestExec(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	open := httpdLRP("exec-open-"+suffix, 1)
	open.AllowSsh = true
	closed := httpdLRP("exec-closed-"+suffix, 1)
	cs.desire(t, open)
	cs.desire(t, closed)
	inst := cs.waitRunning(t, open.GetProcessGuid(), 1)[0]
	cs.waitRunning(t, closed.GetProcessGuid(), 1)
	after, err := cs.bbs.ListCells(callCtx(t), &bbsv1.ListCellsRequest{})
	require.NoError(t, err)
	var repAddr string
	for _, c := range after.GetCells() {
		if c.GetCellId() == inst.GetCellId() {
			repAddr = c.GetRepAddress()
		}
	}
	require.NotEmpty(t, repAddr)
	operator := cs.Certs.Client()
	start := func(args ...string) *repv1.ExecStart {
		return &repv1.ExecStart{ProcessGuid: open.GetProcessGuid(), Index: 0, Args: args}
	}

	t.Run("a command's output and exit status come back through droverctl", func(t *testing.T) {
		stdout, stderr, code := droverctlExec(t, cs, "", "exec", open.GetProcessGuid(), "--", "sh", "-c", `echo "out $INSTANCE_GUID"; echo err >&2; exit 3`)
		require.Equal(t, 3, code)
		require.Equal(t, "out "+inst.GetInstanceGuid()+"\n", stdout, "the instance's env")
		require.Equal(t, "err\n", stderr)

		stdout, _, code = droverctlExec(t, cs, "echo \"sum=$((40+2))\"\n", "exec", "-i", open.GetProcessGuid(), "--", "sh")
		require.Equal(t, 0, code)
		require.Equal(t, "sum=42\n", stdout, "-i sends droverctl's input")
	})

	t.Run("an interactive shell with a terminal follows resizes", func(t *testing.T) {
		s := startExec(t, repAddr, operator, &repv1.ExecStart{ProcessGuid: open.GetProcessGuid(), InstanceGuid: inst.GetInstanceGuid(),
			Args: []string{"sh"}, Tty: true, Size: &repv1.TerminalSize{Rows: 24, Columns: 80}})
		s.send(t, &repv1.ExecRequest{Payload: &repv1.ExecRequest_Stdin{Stdin: []byte("tty; stty size\n")}})
		s.waitOutput(t, "24 80")
		require.Contains(t, s.output(), "/dev/pts/", "the shell has a terminal")
		s.send(t, &repv1.ExecRequest{Payload: &repv1.ExecRequest_Resize{Resize: &repv1.TerminalSize{Rows: 41, Columns: 101}}})
		s.send(t, &repv1.ExecRequest{Payload: &repv1.ExecRequest_Stdin{Stdin: []byte("stty size\n")}})
		s.waitOutput(t, "41 101")
		s.send(t, &repv1.ExecRequest{Payload: &repv1.ExecRequest_Stdin{Stdin: []byte("exit 4\n")}})
		exit, err := s.wait(t)
		require.NoError(t, err)
		require.NotNil(t, exit)
		require.EqualValues(t, 4, *exit)
	})

	t.Run("droverctl -it puts its terminal in raw mode and forwards resizes", func(t *testing.T) {
		ptm, pts := openPty(t, 24, 80)
		ctx, cancel := context.WithTimeout(t.Context(), execWait)
		defer cancel()
		cmd := droverctlCommand(t, ctx, cs.Stack, "exec", "-it", open.GetProcessGuid(), "--", "sh")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
		require.NoError(t, cmd.Start())
		var out syncBuf
		go func() { _, _ = io.Copy(&out, ptm) }()
		waitOut := func(want string) {
			t.Helper()
			require.Eventually(t, func() bool { return strings.Contains(out.String(), want) }, execWait, cellPoll,
				"the terminal never showed %q; it shows %q", want, out.String())
		}
		_, err := ptm.WriteString("stty size\r")
		require.NoError(t, err)
		waitOut("24 80")
		require.NoError(t, unix.IoctlSetWinsize(int(ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 42, Col: 102}))
		require.NoError(t, cmd.Process.Signal(syscall.SIGWINCH))
		_, err = ptm.WriteString("stty size\r")
		require.NoError(t, err)
		waitOut("42 102")
		_, err = ptm.WriteString("exit 7\r")
		require.NoError(t, err)
		var exitErr *exec.ExitError
		require.ErrorAs(t, cmd.Wait(), &exitErr)
		require.Equal(t, 7, exitErr.ExitCode(), "droverctl exits with the shell's status")
	})

	t.Run("refused for a certificate that is not the operator's", func(t *testing.T) {
		ca, err := devcerts.LoadOrCreateCA(cs.Certs.Dir)
		require.NoError(t, err)
		dir := t.TempDir()
		require.NoError(t, devcerts.EnsureCert(ca, dir, "stranger", "stranger-"+suffix, []string{"127.0.0.1"}))
		stranger := tlsconfig.Files{CAFile: cs.Certs.CAFile(), CertFile: filepath.Join(dir, "stranger.crt"), KeyFile: filepath.Join(dir, "stranger.key")}
		for name, files := range map[string]tlsconfig.Files{"the cell's own": cs.Certs.Rep(inst.GetCellId()), "an unknown name": stranger} {
			s := startExec(t, repAddr, files, start("sh", "-c", "echo ran"))
			exit, err := s.wait(t)
			require.Nil(t, exit, name)
			require.Equal(t, codes.PermissionDenied, status.Code(err), "%s: %v", name, err)
			require.NotContains(t, s.output(), "ran")
		}
	})

	t.Run("refused for an LRP that does not allow it", func(t *testing.T) {
		_, stderr, code := droverctlExec(t, cs, "", "exec", closed.GetProcessGuid(), "--", "sh", "-c", "echo ran")
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "allow_ssh")

		_, _, code = droverctlExec(t, cs, "", "enable-ssh", closed.GetProcessGuid())
		require.Equal(t, 0, code)
		stdout, _, code := droverctlExec(t, cs, "", "exec", closed.GetProcessGuid(), "--", "sh", "-c", "echo ran")
		require.Equal(t, 0, code)
		require.Equal(t, "ran\n", stdout)
		_, _, code = droverctlExec(t, cs, "", "disable-ssh", closed.GetProcessGuid())
		require.Equal(t, 0, code)
		_, stderr, code = droverctlExec(t, cs, "", "exec", closed.GetProcessGuid(), "--", "true")
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "allow_ssh")
	})

	t.Run("killed with its children when the client goes away", func(t *testing.T) {
		s := startExec(t, repAddr, operator, &repv1.ExecStart{ProcessGuid: open.GetProcessGuid(), Args: []string{"sh", "-c", "sleep 1001 & (sleep 1002 &); echo started; cat"}, Tty: true})
		s.waitOutput(t, "started")
		require.Eventually(t, func() bool {
			return len(execProcesses(inst.GetInstanceGuid(), "sleep 1001")) == 1 && len(execProcesses(inst.GetInstanceGuid(), "sleep 1002")) == 1
		}, execWait, cellPoll, "the exec's children never ran")
		s.cancel()
		_, err := s.wait(t)
		require.Equal(t, codes.Canceled, status.Code(err))
		require.Eventually(t, func() bool {
			return len(execProcesses(inst.GetInstanceGuid(), "sleep 100")) == 0
		}, execWait, cellPoll, "the exec outlived its client: %v", execProcesses(inst.GetInstanceGuid(), "sleep 100"))
		stdout, _, code := droverctlExec(t, cs, "", "exec", open.GetProcessGuid(), "--", "ps")
		require.Equal(t, 0, code)
		require.NotContains(t, stdout, "sleep 100", "ps inside the container shows no leftover")
		require.Contains(t, stdout, "httpd", "the app itself still runs")
	})

	t.Run("every exec is recorded as an event and a log line", func(t *testing.T) {
		zero := uint64(0)
		ctx, cancel := context.WithTimeout(t.Context(), execWait)
		defer cancel()
		events, err := cs.bbs.Subscribe(ctx, &bbsv1.SubscribeRequest{AfterSequence: &zero})
		require.NoError(t, err)
		_, _, code := droverctlExec(t, cs, "", "exec", open.GetProcessGuid(), "--", "echo", "recorded-"+suffix)
		require.Equal(t, 0, code)
		var found *modelsv1.ExecStartedEvent
		for found == nil {
			resp, err := events.Recv()
			require.NoError(t, err)
			if x := resp.GetEvent().GetExecStarted(); x != nil && slices.Contains(x.GetArgs(), "recorded-"+suffix) {
				found = x
				require.Equal(t, models.EventTypeExecStarted, models.EventType(resp.GetEvent()))
			}
		}
		require.Equal(t, open.GetProcessGuid(), found.GetActualLrpKey().GetProcessGuid())
		require.Equal(t, cellDomain, found.GetActualLrpKey().GetDomain())
		require.Equal(t, inst.GetInstanceGuid(), found.GetActualLrpInstanceKey().GetInstanceGuid())
		require.Equal(t, inst.GetCellId(), found.GetActualLrpInstanceKey().GetCellId())
		require.Equal(t, devcerts.ClientCommonName, found.GetUser())

		var rep interface {
			StdoutPath() string
			StderrPath() string
		}
		for _, r := range cs.Reps {
			if r.CellID() == inst.GetCellId() {
				rep = r
			}
		}
		require.NotNil(t, rep)
		require.Eventually(t, func() bool {
			stdout, _ := os.ReadFile(rep.StdoutPath())
			stderr, _ := os.ReadFile(rep.StderrPath())
			logs := append(stdout, stderr...)
			for _, line := range strings.Split(string(logs), "\n") {
				if strings.Contains(line, `"exec-started"`) && strings.Contains(line, "recorded-"+suffix) && strings.Contains(line, devcerts.ClientCommonName) {
					return true
				}
			}
			return false
		}, execWait, cellPoll, "no exec-started line naming who and what in the rep's log")
	})
}

// syncBuf is a goroutine-safe buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openPty opens a pseudo-terminal of rows x cols; both ends close when the test ends.
func openPty(t *testing.T, rows, cols uint16) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { ptm.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { pts.Close() })
	require.NoError(t, unix.IoctlSetWinsize(int(ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}))
	return ptm, pts
}
