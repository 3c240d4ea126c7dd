package steps_test

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	"drover.dev/executor/steps"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func TestTreeResults(t *testing.T) {
	cases := []struct {
		name    string
		action  *modelsv1.Action
		wantErr string // "" = success
		logs    []string
	}{
		{"run exit 0", run("sh", "-c", "exit 0"), "", nil},
		{"run non-zero", run("sh", "-c", "exit 3"), "APP: Exited with status 3", []string{"APP/stdout: Exit status 3"}},
		{"run false", run("false"), "APP: Exited with status 1", []string{"APP/stdout: Exit status 1"}},
		{"serial stops at first error", serial(run("true"), run("false"), run("sh", "-c", "echo never; exit 0")), "APP: Exited with status 1", []string{"APP/stdout: Exit status 1"}},
		{"serial succeeds", serial(run("true"), run("sh", "-c", "echo hi; exit 0")), "", []string{"APP/stdout: hi"}},
		{"parallel aggregates", parallel(run("sh", "-c", "exit 2"), run("true"), run("sh", "-c", "exit 3")), "APP: Exited with status 2; APP: Exited with status 3", nil},
		{"codependent clean exit fails", codependent(run("true"), run("sleep")), "codependent step exited", nil},
		{"codependent first error wins", codependent(run("sh", "-c", "exit 4"), run("sleep")), "APP: Exited with status 4", nil},
		{"try swallows", try(run("false")), "", nil},
		{"timeout fires", timeout(30, run("sleep")), "exceeded 30ms timeout", nil},
		{"timeout not reached", timeout(5000, run("true")), "", nil},
		{"timeout passes child error through", timeout(5000, run("false")), "APP: Exited with status 1", nil},
		{"emit progress success", progress("starting", "done", "failed", run("true")), "", []string{"APP/stdout: starting", "APP/stdout: done"}},
		{"emit progress failure", progress("starting", "done", "oops", run("false")), "APP: Exited with status 1",
			[]string{"APP/stdout: starting", "APP/stdout: Exit status 1", "APP/stderr: oops: APP: Exited with status 1"}},
		{"emit progress around timeout", progress("", "", "slow", timeout(20, run("sleep"))), "exceeded 20ms timeout", []string{"APP/stderr: slow: exceeded 20ms timeout"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			err := waitErr(t, runAsync(context.Background(), e.build(t, tc.action), nil))
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
			}
			if tc.logs != nil {
				assert.Equal(t, tc.logs, e.lines())
			}
		})
	}
}

func TestRunStepLogSourceAndSuppression(t *testing.T) {
	e := newEnv(t)
	a := &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{LogSource: "STG", Actions: []*modelsv1.Action{
		run("sh", "-c", "echo one; exit 0"),
		{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "sh", Args: []string{"-c", "echo two; exit 0"}, LogSource: "WEB"}}},
		{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "sh", Args: []string{"-c", "echo three; exit 0"}, SuppressLogOutput: true}}},
	}}}}
	require.NoError(t, waitErr(t, runAsync(context.Background(), e.build(t, a), nil)))
	assert.Equal(t, []string{"STG/stdout: one", "WEB/stdout: two"}, e.lines())
}

func TestRunStepEnvAndProcessIDs(t *testing.T) {
	e := newEnv(t)
	a := serial(run("true"), parallel(run("true"), &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{
		Path: "true", Env: []*modelsv1.EnvironmentVariable{{Name: "FOO", Value: "bar"}},
		ResourceLimits: &modelsv1.ResourceLimits{Nofile: 64}, User: "vcap"}}}))
	require.NoError(t, waitErr(t, runAsync(context.Background(), e.build(t, a), nil)))
	for _, id := range []string{"action-0", "action-1-0", "action-1-1"} {
		_, ok := e.rt.ProcessSpec(e.guid, id)
		assert.True(t, ok, "process %s", id)
	}
	spec, _ := e.rt.ProcessSpec(e.guid, "action-1-1")
	assert.Equal(t, "vcap", spec.User)
	assert.Equal(t, uint64(64), spec.Nofile)
	assert.Equal(t, "FOO=bar", spec.Env[0])
	assert.Contains(t, spec.Env, "CF_INSTANCE_IP=127.0.0.1")
	assert.Contains(t, spec.Env, "CF_INSTANCE_PORT=61000")
	assert.Contains(t, spec.Env, "CF_INSTANCE_ADDR=127.0.0.1:61000")
	assert.Contains(t, spec.Env, `CF_INSTANCE_PORTS=[{"external":61000,"internal":8080}]`)

	single, err := steps.Build(run("true"), e.deps, "monitor-3")
	require.NoError(t, err)
	require.NoError(t, single.Run(context.Background(), nil))
	_, ok := e.rt.ProcessSpec(e.guid, "monitor-3")
	assert.True(t, ok)
}

func TestRunStepOutOfMemory(t *testing.T) {
	e := newEnv(t)
	e.deps.OOMKilled = func() bool { return true }
	err := waitErr(t, runAsync(context.Background(), e.build(t, run("sh", "-c", "exit 137")), nil))
	require.Error(t, err)
	assert.Equal(t, "APP: Exited with status 137 (out of memory)", err.Error())
}

func TestRunStepReadyAfterStart(t *testing.T) {
	e := newEnv(t)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, e.build(t, serial(run("true"), run("sleep"))), func() { close(ready) })
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("not ready")
	}
	assert.Equal(t, []string{"action-1"}, e.rt.Processes(e.guid))
	cancel()
	assert.ErrorIs(t, waitErr(t, done), steps.ErrCancelled)
	assert.Equal(t, []syscall.Signal{syscall.SIGTERM}, e.rt.Signals(e.guid, "action-1"))
}

func TestRunStepKillsAfterGracePeriod(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, e.build(t, run("sh", "-c", "trap-term")), nil)
	require.Eventually(t, func() bool { return len(e.rt.Processes(e.guid)) == 1 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	err := waitErr(t, done)
	assert.ErrorIs(t, err, steps.ErrCancelled)
	assert.Contains(t, err.Error(), "exceeded 50ms graceful shutdown interval")
	assert.Equal(t, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, e.rt.Signals(e.guid, "action"))
}

func TestParallelAndCodependentCancelTheRest(t *testing.T) {
	e := newEnv(t)
	err := waitErr(t, runAsync(context.Background(), e.build(t, codependent(run("sleep"), run("sleep"), run("false"))), nil))
	assert.Equal(t, "APP: Exited with status 1", err.Error())
	assert.Empty(t, e.rt.Processes(e.guid))
}

func TestReattachFindsRunningProcesses(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tree := serial(run("true"), run("sleep"))
	first := runAsync(ctx, e.build(t, tree), nil)
	require.Eventually(t, func() bool { return len(e.rt.Processes(e.guid)) == 1 }, 5*time.Second, 5*time.Millisecond)

	again := *e.deps
	again.Reattach = true
	step, err := steps.Build(serial(run("true"), run("sleep")), &again, "action")
	require.NoError(t, err)
	// The first run step's process has exited, so a full reattach of the serial fails there.
	err = waitErr(t, runAsync(context.Background(), step, nil))
	assert.Contains(t, err.Error(), "has exited")

	lone, err := steps.Build(run("sleep"), &again, "action-1")
	require.NoError(t, err)
	ready := make(chan struct{})
	second := runAsync(context.Background(), lone, func() { close(ready) })
	<-ready
	require.NoError(t, e.rt.Destroy(context.Background(), e.guid))
	assert.Equal(t, "APP: Exited with status 137", waitErr(t, second).Error())
	assert.Equal(t, "APP: Exited with status 137", waitErr(t, first).Error())
}

func TestDownload(t *testing.T) {
	e := newEnv(t)
	dl := &fakeDownloader{files: map[string][]byte{"http://blob/app.tgz": tarOf(t, "app/index.html", "hello")}}
	e.deps.Downloader = dl
	a := &modelsv1.Action{Action: &modelsv1.Action_Download{Download: &modelsv1.DownloadAction{
		From: "http://blob/app.tgz", To: "/home/vcap", Artifact: "app", CacheKey: "k", ChecksumAlgorithm: "sha256", ChecksumValue: "abc"}}}
	require.NoError(t, waitErr(t, runAsync(context.Background(), e.build(t, a), nil)))
	assert.Equal(t, []steps.DownloadRequest{{URL: "http://blob/app.tgz", CacheKey: "k", ChecksumAlgorithm: "sha256", ChecksumValue: "abc"}}, dl.reqs)
	rc, err := e.rt.StreamOut(context.Background(), e.guid, "/home/vcap/app/index.html")
	require.NoError(t, err)
	rc.Close()
	assert.Equal(t, []string{"APP/stdout: Downloading app...", "APP/stdout: Downloaded app (2K)"}, e.lines())

	missing := &modelsv1.Action{Action: &modelsv1.Action_Download{Download: &modelsv1.DownloadAction{From: "http://blob/nope", To: "/x"}}}
	err = waitErr(t, runAsync(context.Background(), e.build(t, missing), nil))
	msg, ok := steps.EmittableMessage(err)
	assert.True(t, ok)
	assert.Equal(t, "Downloading failed: unexpected EOF", msg)

	e.deps.Downloader = nil
	err = waitErr(t, runAsync(context.Background(), e.build(t, missing), nil))
	assert.Contains(t, err.Error(), "no downloader configured")
}

func TestUpload(t *testing.T) {
	e := newEnv(t)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Method + " " + string(b) + " " + r.Header.Get("Content-MD5")
	}))
	t.Cleanup(srv.Close)
	require.NoError(t, e.rt.WriteFile(e.guid, "/tmp/out.txt", []byte("result")))
	a := &modelsv1.Action{Action: &modelsv1.Action_Upload{Upload: &modelsv1.UploadAction{From: "/tmp/out.txt", To: srv.URL, Artifact: "out"}}}
	require.NoError(t, waitErr(t, runAsync(context.Background(), e.build(t, a), nil)))
	sum := md5.Sum([]byte("result"))
	assert.Equal(t, "POST result "+base64.StdEncoding.EncodeToString(sum[:]), <-got)
	assert.Equal(t, []string{"APP/stdout: Uploading out...", "APP/stdout: Uploaded out (6B)"}, e.lines())

	bad := &modelsv1.Action{Action: &modelsv1.Action_Upload{Upload: &modelsv1.UploadAction{From: "/nope", To: srv.URL}}}
	err := waitErr(t, runAsync(context.Background(), e.build(t, bad), nil))
	assert.Equal(t, "Uploading failed", err.Error())
}

func TestBuildRejectsBadTrees(t *testing.T) {
	cases := []struct {
		name   string
		action *modelsv1.Action
		want   string
	}{
		{"nil", nil, "action: action is empty"},
		{"empty oneof", &modelsv1.Action{}, "action: no action set"},
		{"run without path", run(""), "action.run: path is required"},
		{"empty serial", serial(), "action.serial: actions must not be empty"},
		{"nested nil", serial(run("true"), nil), "action.serial.actions[1]: action is empty"},
		{"zero timeout", timeout(0, run("true")), "timeout_ms must be positive"},
		{"download without to", &modelsv1.Action{Action: &modelsv1.Action_Download{Download: &modelsv1.DownloadAction{From: "x"}}}, "from and to are required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := steps.Build(tc.action, &steps.Deps{}, "action")
			require.Error(t, err)
			assert.ErrorIs(t, err, executor.ErrStepsInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNetworkEnv(t *testing.T) {
	cases := []struct {
		name string
		net  executor.NetInfo
		want []string
	}{
		{"no ports", executor.NetInfo{ExternalIP: "1.2.3.4", InternalIP: "10.0.0.2"},
			[]string{"CF_INSTANCE_IP=1.2.3.4", "CF_INSTANCE_INTERNAL_IP=10.0.0.2", "CF_INSTANCE_PORT=", "CF_INSTANCE_ADDR=", "CF_INSTANCE_PORTS=[]"}},
		{"two ports", executor.NetInfo{ExternalIP: "1.2.3.4", InternalIP: "10.0.0.2", Ports: []executor.PortMapping{{ContainerPort: 8080, HostPort: 61001}, {ContainerPort: 2222, HostPort: 61002}}},
			[]string{"CF_INSTANCE_IP=1.2.3.4", "CF_INSTANCE_INTERNAL_IP=10.0.0.2", "CF_INSTANCE_PORT=61001", "CF_INSTANCE_ADDR=1.2.3.4:61001",
				`CF_INSTANCE_PORTS=[{"external":61001,"internal":8080},{"external":61002,"internal":2222}]`}},
		{"unmapped first port", executor.NetInfo{ExternalIP: "1.2.3.4", Ports: []executor.PortMapping{{ContainerPort: 8080}}},
			[]string{"CF_INSTANCE_IP=1.2.3.4", "CF_INSTANCE_INTERNAL_IP=", "CF_INSTANCE_PORT=", "CF_INSTANCE_ADDR=", `CF_INSTANCE_PORTS=[{"internal":8080}]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, steps.NetworkEnv(tc.net))
		})
	}
}

func TestHumanBytes(t *testing.T) {
	for in, want := range map[int64]string{0: "0B", 512: "512B", 1024: "1K", 1536: "1.5K", 20 << 20: "20M"} {
		assert.Equal(t, want, steps.HumanBytes(in))
	}
}

func TestEmittableMessage(t *testing.T) {
	_, ok := steps.EmittableMessage(errors.New("plain"))
	assert.False(t, ok)
	msg, ok := steps.EmittableMessage(&steps.MultiError{Errs: []error{errors.New("plain"), &steps.EmittableError{Msg: "shown"}}})
	assert.True(t, ok)
	assert.Equal(t, "shown", msg)
}
