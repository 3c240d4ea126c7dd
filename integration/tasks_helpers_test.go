package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	"drover.dev/devstack"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// callbackBody is the JSON the BBS posts to a task's completion_callback_url
// (bbs/server.TaskCallbackResponse, decoded strictly so a renamed field shows).
type callbackBody struct {
	TaskGuid      string `json:"task_guid"`
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason"`
	Result        string `json:"result"`
	Annotation    string `json:"annotation"`
	CreatedAt     int64  `json:"created_at"`
}

// callbackAttempt is one POST a callbackReceiver got.
type callbackAttempt struct {
	At   time.Time
	Body callbackBody
	// Err is set when the request was not a well-formed callback.
	Err string
}

// callbackAnswer decides how a callbackReceiver answers attempt n (1-based).
type callbackAnswer func(n int, w http.ResponseWriter, r *http.Request)

// answerOK accepts every attempt.
func answerOK(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

// callbackReceiver is an httptest server recording the task callbacks it receives.
type callbackReceiver struct {
	srv    *httptest.Server
	answer callbackAnswer

	mu       sync.Mutex
	attempts []callbackAttempt
}

// newCallbackReceiver starts a receiver answering with answer; it is closed when the
// test ends (a hanging answer must return when the request's context ends).
func newCallbackReceiver(t *testing.T, answer callbackAnswer) *callbackReceiver {
	t.Helper()
	cr := &callbackReceiver{answer: answer}
	cr.srv = httptest.NewServer(http.HandlerFunc(cr.serve))
	t.Cleanup(cr.srv.Close)
	return cr
}

// URL is the completion_callback_url of the receiver.
func (cr *callbackReceiver) URL() string { return cr.srv.URL + "/task-done" }

func (cr *callbackReceiver) serve(w http.ResponseWriter, r *http.Request) {
	a := callbackAttempt{At: time.Now()}
	data, err := io.ReadAll(r.Body)
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/task-done":
		a.Err = "unexpected " + r.Method + " " + r.URL.Path
	case r.Header.Get("Content-Type") != "application/json":
		a.Err = "content type " + r.Header.Get("Content-Type")
	case err != nil:
		a.Err = "read body: " + err.Error()
	default:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a.Body); err != nil {
			a.Err = "decode " + string(data) + ": " + err.Error()
		}
	}
	cr.mu.Lock()
	cr.attempts = append(cr.attempts, a)
	n := len(cr.attempts)
	cr.mu.Unlock()
	cr.answer(n, w, r)
}

// Attempts returns a copy of the attempts so far.
func (cr *callbackReceiver) Attempts() []callbackAttempt {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return append([]callbackAttempt(nil), cr.attempts...)
}

// waitAttempts polls until at least n attempts arrived and returns them; every attempt
// must be a well-formed callback.
func (cr *callbackReceiver) waitAttempts(t *testing.T, n int, wait time.Duration) []callbackAttempt {
	t.Helper()
	var got []callbackAttempt
	require.Eventually(t, func() bool {
		got = cr.Attempts()
		return len(got) >= n
	}, wait, cellPoll, "want %d callback attempts within %s", n, wait)
	for i, a := range got {
		require.Empty(t, a.Err, "callback attempt %d", i+1)
	}
	return got
}

// waitTaskDeleted polls GetTask until the BBS answers ResourceNotFound.
func (cs *cellStack) waitTaskDeleted(t *testing.T, guid string, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		resp, err := cs.bbs.GetTask(callCtx(t), &bbsv1.GetTaskRequest{TaskGuid: guid})
		if err != nil && models.FromError(err).Type == models.ErrTypeResourceNotFound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s was not deleted within %s; last: state %s error %v", guid, wait, resp.GetTask().GetState(), err)
		}
		time.Sleep(cellPoll)
	}
}

// loggedFor reports whether svc wrote, since it started, a log line whose message is
// msg and that names the task guid. It checks LoggedSinceStart first, then the line.
func loggedFor(svc *devstack.Service, msg, guid string) bool {
	if !svc.LoggedSinceStart(msg) {
		return false
	}
	f, err := os.Open(svc.StdoutPath())
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `"msg":"`+msg+`"`) && strings.Contains(line, `"task-guid":"`+guid+`"`) {
			return true
		}
	}
	return false
}

// logLineJSON is a line of `droverctl --json logs` (ctl/output.LogLineJSON).
type logLineJSON struct {
	Time          string `json:"time"`
	ContainerGuid string `json:"container_guid"`
	Source        string `json:"source"`
	Stream        string `json:"stream"`
	Text          string `json:"text"`
}

// receivedLine is a droverctl output line and when the test read it.
type receivedLine struct {
	logLineJSON
	written  time.Time
	received time.Time
}

// droverctlBuild builds droverctl once per test process.
var droverctlBuild struct {
	once sync.Once
	err  error
}

// droverctlCommand builds the stack's droverctl (once per process) and returns a
// command running it
// against the stack with args; interrupting ctx sends SIGINT, as a user's Ctrl-C.
func droverctlCommand(t *testing.T, ctx context.Context, s *devstack.Stack, args ...string) *exec.Cmd {
	t.Helper()
	droverctlBuild.once.Do(func() {
		droverctlBuild.err = devstack.Build(context.Background(), s.Root, s.BinDir, devstack.DroverctlBinary)
	})
	require.NoError(t, droverctlBuild.err)
	cmd := exec.CommandContext(ctx, filepath.Join(s.BinDir, devstack.DroverctlBinary.Name), args...)
	cmd.Env = append(os.Environ(), "DROVER_HOME="+s.Home, "DROVER_BBS_ADDRESS="+s.BBS[0].GRPCAddress())
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}
