package steps_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	"drover.dev/executor/logbuf"
	"drover.dev/executor/sim"
	"drover.dev/executor/steps"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// env is one simulated container with its log buffer.
type env struct {
	rt   *sim.Runtime
	guid string
	logs *logbuf.Buffer
	deps *steps.Deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	rt := sim.New(sim.Config{PreloadedRootFSes: []string{"busybox"}})
	guid := "c-" + strings.ReplaceAll(t.Name(), "/", "-")
	net, err := rt.Create(context.Background(), executor.ContainerSpec{Guid: guid, RootFS: "preloaded:busybox", Ports: []uint32{8080}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Destroy(context.Background(), guid) })
	buf := logbuf.New(100)
	return &env{rt: rt, guid: guid, logs: buf, deps: &steps.Deps{
		Runtime: rt, Guid: guid, NetInfo: net, Logs: logbuf.Sink{Buffer: buf, Guid: guid},
		GracePeriod: 50 * time.Millisecond,
	}}
}

func (e *env) lines() []string {
	var out []string
	for _, l := range e.logs.Lines(0) {
		out = append(out, l.Source+"/"+l.Stream+": "+l.Text)
	}
	return out
}

func (e *env) build(t *testing.T, a *modelsv1.Action) steps.Step {
	t.Helper()
	s, err := steps.Build(a, e.deps, "action")
	require.NoError(t, err)
	return s
}

// runAsync runs a step in the background and returns its result channel.
func runAsync(ctx context.Context, s steps.Step, ready func()) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.Run(ctx, ready) }()
	return ch
}

func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("step did not finish")
		return nil
	}
}

func run(path string, args ...string) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: path, Args: args}}}
}

func serial(as ...*modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{Actions: as}}}
}

func parallel(as ...*modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Parallel{Parallel: &modelsv1.ParallelAction{Actions: as}}}
}

func codependent(as ...*modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Codependent{Codependent: &modelsv1.CodependentAction{Actions: as}}}
}

func try(a *modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Try{Try: &modelsv1.TryAction{Action: a}}}
}

func timeout(ms int64, a *modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Timeout{Timeout: &modelsv1.TimeoutAction{Action: a, TimeoutMs: ms}}}
}

func progress(start, success, prefix string, a *modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_EmitProgress{EmitProgress: &modelsv1.EmitProgressAction{
		Action: a, StartMessage: start, SuccessMessage: success, FailureMessagePrefix: prefix}}}
}

// tarOf returns a tar stream with one file.
func tarOf(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}))
	_, err := tw.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// fakeDownloader serves fixed tar streams by URL and records requests.
type fakeDownloader struct {
	files map[string][]byte
	reqs  []steps.DownloadRequest
}

func (f *fakeDownloader) Fetch(ctx context.Context, req steps.DownloadRequest) (io.ReadCloser, error) {
	f.reqs = append(f.reqs, req)
	data, ok := f.files[req.URL]
	if !ok {
		return nil, io.ErrUnexpectedEOF
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}
