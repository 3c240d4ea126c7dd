package push_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/push"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// harness is a push against fakes.
type harness struct {
	j      *journal
	bbs    *fakeBBS
	blobs  *fakeBlobstore
	routes *fakeRoutes
	logs   fakeLogs
	files  []push.Resource
	out    bytes.Buffer
	opts   push.Options
}

func newHarness(t *testing.T, existing ...*modelsv1.DesiredLRP) *harness {
	t.Helper()
	j := &journal{}
	bbs := newFakeBBS(j, existing...)
	return &harness{
		j: j, bbs: bbs,
		blobs:  &fakeBlobstore{j: j, known: map[string]bool{"sha-index": true}},
		routes: &fakeRoutes{j: j, bbs: bbs, lag: 2, seen: map[string]int{}},
		logs: fakeLogs{lines: []*repv1.LogLine{
			{Source: "STG", Stream: "stdout", Text: "builder: detected static site"},
			{Source: "STG", Stream: "stdout", Text: "builder: droplet written"},
		}},
		files: []push.Resource{
			{Path: "index.html", SHA1: "sha-index", Size: 100, Mode: "0644"},
			{Path: "style.css", SHA1: "sha-style", Size: 1000, Mode: "0644"},
			{Path: "app.js", SHA1: "sha-app", Size: 229, Mode: "0644"},
		},
		opts: push.Options{Dir: "/app", Wait: true, StartTimeout: 10 * time.Second,
			App: push.App{Name: "hello", Stack: "busybox", Instances: 2, MemoryMB: 64, DiskMB: 256, Domain: "example.com"}},
	}
}

func (h *harness) push(t *testing.T) (push.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return push.Push(ctx, h.opts, push.Deps{
		BBS: h.bbs, Blobstore: h.blobs, Logs: h.logs, Routes: h.routes,
		ScanDir:      func(string) ([]push.Resource, error) { return h.files, nil },
		Out:          &h.out,
		Random:       bytes.NewReader([]byte{1, 2, 3}),
		PollInterval: time.Millisecond,
	})
}

// pushedVersion is the LRP an earlier push of these files with these options made.
func (h *harness) existingLRP(t *testing.T, instances int32) *modelsv1.DesiredLRP {
	t.Helper()
	res, err := h.push(t)
	require.NoError(t, err)
	lrp := h.bbs.lrp(res.ProcessGUID)
	lrp.Instances = instances
	return lrp
}

func TestPushStagesAndStarts(t *testing.T) {
	h := newHarness(t)
	h.bbs.actuals = func(l *modelsv1.DesiredLRP, n int) []*modelsv1.ActualLRP { return allRunning(l)[:min(n, 2)] }
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())

	out := h.out.String()
	require.Contains(t, out, "Uploading 2 of 3 files (1.2K), 1 already on the server\n")
	require.Contains(t, out, "   [STG/0] builder: detected static site\n   [STG/0] builder: droplet written\n")
	require.Contains(t, out, "0 of 2 instances running\n")
	require.Contains(t, out, "2 of 2 instances running\n")
	require.Contains(t, out, "Routed at http://hello.example.com\n")
	require.True(t, res.Staged)
	require.Equal(t, "http://hello.example.com", res.URL)

	require.Equal(t, 0, h.bbs.taskCount(), "the staging task is gone")
	require.Less(t, h.j.index("TaskCompleted"), h.j.index("ResolvingTask"))
	require.Less(t, h.j.index("ResolvingTask"), h.j.index("DeleteTask"))
	require.Less(t, h.j.index("DeleteTask"), h.j.index("DesireLRP"))

	lrp := h.bbs.lrp(res.ProcessGUID)
	require.NotNil(t, lrp)
	app := res.App
	require.Equal(t, app.GUID()+"-"+app.Version(), lrp.GetProcessGuid())
	require.Equal(t, "http://fs/v1/blobs/"+app.DropletKey(), lrp.GetSetup().GetDownload().GetFrom())
	want, _ := h.blobs.BlobSHA256(context.Background(), app.DropletKey())
	require.Equal(t, want, lrp.GetSetup().GetDownload().GetChecksumValue())
	require.Equal(t, []string{"cd /home/vcap/app && exec httpd -f -v -p $PORT -h /home/vcap/app"}, lrp.GetAction().GetRun().GetArgs()[1:])
	require.Equal(t, "staging-"+app.Version()+"-010203", h.bbs.desiredTasks[0].GetTaskGuid())
}

func TestPushSameBitsAgainUploadsNothingAndDoesNotStage(t *testing.T) {
	h := newHarness(t)
	lrp := h.existingLRP(t, 2)
	h.out.Reset()
	h.j = &journal{}
	h.bbs.j, h.blobs.j = h.j, h.j

	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.False(t, res.Staged)
	require.Equal(t, lrp.GetProcessGuid(), res.ProcessGUID)
	require.Contains(t, h.out.String(), "Uploading 0 of 3 files (0B), 3 already on the server")
	require.Contains(t, h.out.String(), "nothing to stage")
	require.Equal(t, -1, h.j.index("DesireTask"))
	require.Equal(t, -1, h.j.index("DesireLRP"))
	require.Equal(t, -1, h.j.index("Scale"))

	h.opts.App.Instances = 3
	_, err = h.push(t)
	require.NoError(t, err, h.out.String())
	require.Equal(t, -1, h.j.index("DesireTask"))
	require.NotEqual(t, -1, h.j.index("Scale "+lrp.GetProcessGuid()+" 3"))
	require.Contains(t, h.out.String(), "3 of 3 instances running")
}

func TestPushStagingFailureNamesTheBuildersError(t *testing.T) {
	h := newHarness(t)
	h.bbs.outcome = taskOutcome{failed: true, reason: "Exited with status 222"}
	h.logs.lines = append(h.logs.lines[:1],
		&repv1.LogLine{Source: "STG", Stream: "stderr", Text: "builder: no app detected: need start.sh (shell app) or index.html (static site)"},
		&repv1.LogLine{Source: "STG", Stream: "stdout", Text: "bye"})
	_, err := h.push(t)
	require.EqualError(t, err, "staging failed: builder: no app detected: need start.sh (shell app) or index.html (static site)")
	require.Equal(t, 0, h.bbs.taskCount(), "the failed staging task is gone")
	require.Equal(t, -1, h.j.index("DesireLRP"))

	h = newHarness(t)
	h.bbs.outcome = taskOutcome{failed: true, reason: "Exited with status 1"}
	h.logs.lines = nil
	_, err = h.push(t)
	require.EqualError(t, err, "staging failed: Exited with status 1", "without stderr, the failure reason")
	require.Equal(t, 0, h.bbs.taskCount())
}

func TestPushStackNoCellServes(t *testing.T) {
	h := newHarness(t)
	h.opts.App.Stack = "windows"
	h.bbs.outcome = taskOutcome{failed: true, unplaced: true, reason: "found no compatible cell for required rootfs preloaded:windows"}
	_, err := h.push(t)
	require.EqualError(t, err, `staging failed: no cell serves stack "windows" (rootfs preloaded:windows)`)
	require.Equal(t, 0, h.bbs.taskCount())
}

func TestPushCrashRemovesTheNewLRPAndKeepsTheOld(t *testing.T) {
	h := newHarness(t)
	old := h.existingLRP(t, 2)
	h.files = append(h.files, push.Resource{Path: "new.html", SHA1: "sha-new", Size: 5})
	h.bbs.actuals = func(l *modelsv1.DesiredLRP, n int) []*modelsv1.ActualLRP {
		if l.GetProcessGuid() == old.GetProcessGuid() || n < 2 {
			return allRunning(l)[:1]
		}
		return []*modelsv1.ActualLRP{{ProcessGuid: l.GetProcessGuid(), Index: 0, CellId: "cell-1", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED, CrashCount: 1, CrashReason: "Exited with status 1"}}
	}
	h.logs.appLines = []*repv1.LogLine{{Source: "APP", Stream: "stderr", Text: "crashing on purpose"}}
	res, err := h.push(t)
	require.EqualError(t, err, "start failed: instance 0 crashed: Exited with status 1")
	require.Contains(t, h.out.String(), "[APP/0] crashing on purpose", "the app's own output is shown")
	require.NotEqual(t, old.GetProcessGuid(), res.ProcessGUID)
	require.Nil(t, h.bbs.lrp(res.ProcessGUID), "the new LRP is removed")
	require.NotNil(t, h.bbs.lrp(old.GetProcessGuid()), "the old LRP stays")
	require.NotEmpty(t, h.bbs.lrp(old.GetProcessGuid()).GetRoutes(), "and keeps its routes")
	require.Equal(t, 0, h.bbs.taskCount())
}

func TestPushTimeoutRemovesTheNewLRP(t *testing.T) {
	h := newHarness(t)
	h.opts.StartTimeout = 50 * time.Millisecond
	h.bbs.actuals = func(l *modelsv1.DesiredLRP, _ int) []*modelsv1.ActualLRP { return allRunning(l)[:1] }
	res, err := h.push(t)
	require.ErrorContains(t, err, "start failed: 1 of 2 instances of "+res.ProcessGUID+" running after 50ms (--timeout)")
	require.Nil(t, h.bbs.lrp(res.ProcessGUID))
}

func TestPushRolloutRemovesTheOldVersionOnlyWhenTheNewOneRunsAndIsRouted(t *testing.T) {
	h := newHarness(t)
	old := h.existingLRP(t, 2)
	h.j = &journal{}
	h.bbs.j, h.blobs.j, h.routes.j = h.j, h.j, h.j
	h.files[0].SHA1 = "sha-index-2"
	h.bbs.actuals = func(l *modelsv1.DesiredLRP, n int) []*modelsv1.ActualLRP {
		if l.GetProcessGuid() != old.GetProcessGuid() && n < 3 {
			return allRunning(l)[:min(n, 1)]
		}
		return allRunning(l)
	}
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.Equal(t, []string{old.GetProcessGuid()}, res.Removed)
	require.Nil(t, h.bbs.lrp(old.GetProcessGuid()))
	require.NotNil(t, h.bbs.lrp(res.ProcessGUID))
	require.Contains(t, h.out.String(), "Uploading 1 of 3 files (100B), 2 already on the server")

	clear := h.j.index("ClearRoutes " + old.GetProcessGuid())
	removed := h.j.index("RemoveDesiredLRP " + old.GetProcessGuid())
	require.Less(t, h.j.index("DesireLRP "+res.ProcessGUID), clear)
	require.Less(t, clear, removed)
	// Between the two, the route-emitter's last answers list the new version's
	// endpoints and none of the old one's.
	var lastNew, lastOld string
	for _, e := range h.j.all()[clear:removed] {
		switch {
		case len(e) > 7 && e[:7] == "Routes " && contains(e, res.ProcessGUID):
			lastNew = e
		case len(e) > 7 && e[:7] == "Routes " && contains(e, old.GetProcessGuid()):
			lastOld = e
		}
	}
	require.Equal(t, "Routes "+res.ProcessGUID+" 2", lastNew)
	require.Equal(t, "Routes "+old.GetProcessGuid()+" none", lastOld)
	out := h.out.String()
	require.Contains(t, out, "0 of 2 instances running\n1 of 2 instances running\n2 of 2 instances running\n", "each count once")
}

func TestPushRolloutWithoutRouteEmitterWarns(t *testing.T) {
	h := newHarness(t)
	old := h.existingLRP(t, 1)
	h.files[0].SHA1 = "sha-index-2"
	h.routes.err = errors.New("connection refused")
	res, err := h.push(t)
	require.NoError(t, err)
	require.Contains(t, h.out.String(), "warning: route-emitter: connection refused: not waiting for the routers")
	require.Nil(t, h.bbs.lrp(old.GetProcessGuid()))
	require.NotNil(t, h.bbs.lrp(res.ProcessGUID))
}

func TestPushNoWaitIsRefusedWhileAnotherVersionRuns(t *testing.T) {
	h := newHarness(t)
	h.existingLRP(t, 1)
	h.files[0].SHA1 = "sha-index-2"
	h.opts.Wait = false
	_, err := h.push(t)
	require.ErrorContains(t, err, "--wait=false is refused: another version of hello runs")

	h = newHarness(t)
	h.opts.Wait = false
	h.bbs.actuals = func(*modelsv1.DesiredLRP, int) []*modelsv1.ActualLRP { return nil }
	res, err := h.push(t)
	require.NoError(t, err)
	require.NotNil(t, h.bbs.lrp(res.ProcessGUID), "the LRP is desired and left to start")
	require.Contains(t, h.out.String(), "not waiting")
}

func TestPushInterruptedWhileStagingDeletesTheTask(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	h.bbs.outcome.unplaced = true
	blocking := &blockingBBS{fakeBBS: h.bbs, cancel: cancel}
	_, err := push.Push(ctx, h.opts, push.Deps{
		BBS: blocking, Blobstore: h.blobs, Logs: h.logs, Routes: h.routes,
		ScanDir: func(string) ([]push.Resource, error) { return h.files, nil }, Out: &h.out, PollInterval: time.Millisecond,
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 0, h.bbs.taskCount(), "the task is cancelled, resolved and deleted")
	require.NotEqual(t, -1, h.j.index("CancelTask"))
}

// blockingBBS cancels the push at the first GetTask, before the task completes.
type blockingBBS struct {
	*fakeBBS
	cancel    context.CancelFunc
	cancelled bool
}

func (b *blockingBBS) GetTask(ctx context.Context, guid string) (*modelsv1.Task, error) {
	if !b.cancelled {
		b.cancelled = true
		b.cancel()
		return nil, ctx.Err()
	}
	b.fakeBBS.mu.Lock()
	defer b.fakeBBS.mu.Unlock()
	t, ok := b.tasks[guid]
	if !ok {
		return nil, notFound(guid)
	}
	return t, nil
}

func contains(s, sub string) bool { return bytes.Contains([]byte(s), []byte(sub)) }
