package push_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/ctl/push"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// harness is a push against fakes.
type harness struct {
	j      *journal
	bbs    *fakeBBS
	blobs  *fakeBlobstore
	routes *fakeRoutes
	stager *fakeStager
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
		stager: &fakeStager{j: j, stacks: []*stagerv1.Stack{{Name: "busybox"}, {Name: "bookworm", Default: true}}},
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
	return h.pushWith(ctx)
}

func (h *harness) pushWith(ctx context.Context) (push.Result, error) {
	return push.Push(ctx, h.opts, push.Deps{
		BBS: h.bbs, Blobstore: h.blobs, Stager: h.stager, Logs: h.logs, Routes: h.routes,
		ScanDir:      func(string) ([]push.Resource, error) { return h.files, nil },
		Out:          &h.out,
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
	h.opts.App.Buildpacks = []string{"staticfile", "nodejs"}
	h.opts.App.Env = []push.EnvVar{{Name: "GREETING", Value: "hi"}}
	h.bbs.actuals = func(l *modelsv1.DesiredLRP, n int) []*modelsv1.ActualLRP { return allRunning(l)[:min(n, 2)] }
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())

	out := h.out.String()
	require.Contains(t, out, "Uploading 2 of 3 files (1.2K), 1 already on the server\n")
	require.Contains(t, out, "Staging hello with task staging-task-1 on stack busybox (buildpacks: staticfile, nodejs)\n"+
		"   [STG/0] -----> Staticfile Buildpack\n"+
		"   [STG/0]        Copying the site\n"+
		"Staged hello: staticfile buildpack, start command \"./start-nginx\"\n"+
		"Staging ran on cell-1 in 1.5s; droplet 1.2K\n")
	require.Contains(t, out, "0 of 2 instances running\n")
	require.Contains(t, out, "2 of 2 instances running\n")
	require.Contains(t, out, "Routed at http://hello.example.com\n")
	require.True(t, res.Staged)
	require.Equal(t, "http://hello.example.com", res.URL)
	require.Less(t, h.j.index("Stage hello"), h.j.index("DesireLRP"))
	require.Equal(t, -1, h.j.index("ListStacks"), "a given stack needs no lookup")

	app := res.App
	req := h.stager.lastRequest()
	require.Equal(t, app.GUID(), req.GetAppGuid())
	require.Equal(t, "hello", req.GetAppName())
	require.Equal(t, app.PackageKey, req.GetPackageKey())
	require.Equal(t, app.PackageSHA256, req.GetPackageSha256())
	require.Equal(t, "busybox", req.GetStack())
	require.Equal(t, []string{"staticfile", "nodejs"}, req.GetBuildpacks())
	require.Equal(t, "GREETING", req.GetEnv()[0].GetName())
	require.Equal(t, "hi", req.GetEnv()[0].GetValue())
	require.EqualValues(t, 64, req.GetMemoryMb())
	require.EqualValues(t, 256, req.GetDiskMb())
	require.Equal(t, app.DropletKey(), req.GetDropletKey())

	lrp := h.bbs.lrp(res.ProcessGUID)
	require.NotNil(t, lrp)
	require.Equal(t, app.GUID()+"-"+app.Version(), lrp.GetProcessGuid())
	droplet := lrp.GetSetup().GetSerial().GetActions()[0].GetDownload()
	require.Equal(t, "http://fs/v1/blobs/"+app.DropletKey(), droplet.GetFrom())
	require.Equal(t, strings.Repeat("d", 64), droplet.GetChecksumValue(), "the stager's droplet checksum")
	require.Equal(t, []string{"/home/vcap/app", "./start-nginx"}, lrp.GetAction().GetRun().GetArgs())
	require.Equal(t, "preloaded:busybox", lrp.GetRootfs())
}

func TestPushWithoutStackAsksTheStagerForTheDefault(t *testing.T) {
	h := newHarness(t)
	h.opts.App.Stack = ""
	res, err := h.push(t)
	require.NoError(t, err, h.out.String())
	require.Equal(t, "bookworm", res.App.Stack)
	require.Equal(t, "bookworm", h.stager.lastRequest().GetStack())
	require.Less(t, h.j.index("ListStacks"), h.j.index("UploadPackage"))
	require.Contains(t, h.out.String(), "Using the stager's default stack bookworm\n")
	explicit := h.opts.App
	explicit.Stack, explicit.PackageKey, explicit.PackageSHA256 = "bookworm", res.App.PackageKey, res.App.PackageSHA256
	require.Equal(t, explicit.ProcessGUID(), res.ProcessGUID, "the version names the stack")

	h = newHarness(t)
	h.opts.App.Stack = ""
	h.stager.stacks = []*stagerv1.Stack{{Name: "busybox"}}
	_, err = h.push(t)
	require.EqualError(t, err, "the stager has no default stack: pass --stack")
	require.Equal(t, -1, h.j.index("UploadPackage"))

	h = newHarness(t)
	h.opts.App.Stack = ""
	h.stager.err = status.Error(codes.Unavailable, "stager at 127.0.0.1:17020: connection refused")
	_, err = h.push(t)
	require.EqualError(t, err, "asking the stager for the default stack: stager at 127.0.0.1:17020: connection refused")
}

func TestPushStagingFailureDesiresNoLRP(t *testing.T) {
	failure := &stagerv1.StagingFailure{TaskGuid: "staging-task-1", Reason: "buildpack nodejs: bin/compile exited with status 1",
		LastLines: []string{"npm ERR! JSON.parse Unexpected token", "npm ERR! Failed to parse package.json"}}
	for _, withLogs := range []bool{true, false} {
		t.Run(map[bool]string{true: "lines streamed", false: "no line streamed"}[withLogs], func(t *testing.T) {
			h := newHarness(t)
			h.stager.stage = func(*stagerv1.StageRequest) []*stagerv1.StageResponse {
				events := []*stagerv1.StageResponse{{Event: &stagerv1.StageResponse_Started{Started: &stagerv1.StagingStarted{TaskGuid: "staging-task-1", Stack: "busybox"}}}}
				if withLogs {
					for _, l := range failure.GetLastLines() {
						events = append(events, &stagerv1.StageResponse{Event: &stagerv1.StageResponse_Log{Log: &repv1.LogLine{Source: "STG", Text: l}}})
					}
				}
				return append(events, &stagerv1.StageResponse{Event: &stagerv1.StageResponse_Failure{Failure: failure}})
			}
			res, err := h.push(t)
			require.EqualError(t, err, "staging failed: buildpack nodejs: bin/compile exited with status 1")
			require.Equal(t, -1, h.j.index("DesireLRP"), "no LRP is desired")
			require.Nil(t, h.bbs.lrp(res.ProcessGUID))
			out := h.out.String()
			require.Contains(t, out, "Staging hello with task staging-task-1 on stack busybox\n")
			if withLogs {
				require.Contains(t, out, "   [STG/0] npm ERR! JSON.parse Unexpected token\n   [STG/0] npm ERR! Failed to parse package.json\n")
				require.NotContains(t, out, "\n   npm ERR!", "streamed lines are not printed twice")
			} else {
				require.Contains(t, out, "\n   npm ERR! JSON.parse Unexpected token\n   npm ERR! Failed to parse package.json\n")
			}
		})
	}
}

func TestPushStagerErrorsAreItsMessage(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{status.Error(codes.FailedPrecondition, `no cell serves stack "nostack"`), `staging failed: no cell serves stack "nostack"`},
		{status.Error(codes.InvalidArgument, `buildpack "nope" is not registered for stack "bookworm"`), `staging failed: buildpack "nope" is not registered for stack "bookworm"`},
	} {
		h := newHarness(t)
		h.stager.err = tt.err
		res, err := h.push(t)
		require.EqualError(t, err, tt.want)
		require.Nil(t, h.bbs.lrp(res.ProcessGUID))
	}
}

func TestPushStagingStreamCut(t *testing.T) {
	started := []*stagerv1.StageResponse{{Event: &stagerv1.StageResponse_Started{Started: &stagerv1.StagingStarted{TaskGuid: "t", Stack: "busybox"}}}}
	h := newHarness(t)
	h.stager.stage = func(*stagerv1.StageRequest) []*stagerv1.StageResponse { return started }
	res, err := h.push(t)
	require.EqualError(t, err, "staging failed: the stager's stream ended without a result or failure")
	require.Nil(t, h.bbs.lrp(res.ProcessGUID))

	h = newHarness(t)
	h.stager.stage = func(*stagerv1.StageRequest) []*stagerv1.StageResponse { return started }
	h.stager.cut = status.Error(codes.Unavailable, "error reading from server: EOF")
	_, err = h.push(t)
	require.EqualError(t, err, "staging failed: error reading from server: EOF")
	require.Equal(t, -1, h.j.index("DesireLRP"))
}

func TestPushRefusesAResultItCannotRun(t *testing.T) {
	h := newHarness(t)
	h.stager.stage = func(req *stagerv1.StageRequest) []*stagerv1.StageResponse {
		r := stagedResult(req)
		r.StartCommand, r.User = "", ""
		return []*stagerv1.StageResponse{{Event: &stagerv1.StageResponse_Result{Result: r}}}
	}
	_, err := h.push(t)
	require.EqualError(t, err, "staging failed: the stager's result has no start_command, user")
	require.Equal(t, -1, h.j.index("DesireLRP"))
}

func TestPushInterruptedWhileStaging(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.stager.stage = func(*stagerv1.StageRequest) []*stagerv1.StageResponse {
		cancel()
		return nil
	}
	_, err := h.pushWith(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, -1, h.j.index("DesireLRP"))
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
	require.Equal(t, -1, h.j.index("Stage "))
	require.Equal(t, -1, h.j.index("DesireLRP"))
	require.Equal(t, -1, h.j.index("Scale"))

	h.opts.App.Instances = 3
	_, err = h.push(t)
	require.NoError(t, err, h.out.String())
	require.Equal(t, -1, h.j.index("Stage "))
	require.NotEqual(t, -1, h.j.index("Scale "+lrp.GetProcessGuid()+" 3"))
	require.Contains(t, h.out.String(), "3 of 3 instances running")
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

func contains(s, sub string) bool { return bytes.Contains([]byte(s), []byte(sub)) }
