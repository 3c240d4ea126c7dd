package push_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	"drover.dev/ctl/push"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// fakeURLs are fileserver URLs under http://fs.
type fakeURLs struct{}

func (fakeURLs) BlobURL(key string) string { return "http://fs/v1/blobs/" + key }

func testApp() push.App {
	return push.App{Name: "hello", Stack: "busybox", Instances: 2, MemoryMB: 64, DiskMB: 256, Domain: "example.com",
		PackageKey: "packages/abc.zip", PackageSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
}

func TestDesiredLRPPassesBBSValidation(t *testing.T) {
	app := testApp()
	app.Env = []push.EnvVar{{Name: "GREETING", Value: "hi"}, {Name: "EMPTY", Value: ""}}
	req := push.StageRequest(app)
	staged := stagedResult(req)
	staged.Rootfs = "preloaded:bookworm-test"
	lrp := push.DesiredLRP(app, staged, fakeURLs{})
	require.NoError(t, models.ValidateRequest(&bbsv1.DesireLRPRequest{DesiredLrp: lrp}))
	require.Equal(t, app.ProcessGUID(), lrp.GetProcessGuid())
	require.Equal(t, "apps", lrp.GetDomain())
	require.Equal(t, "preloaded:bookworm-test", lrp.GetRootfs(), "the result's rootfs")
	require.EqualValues(t, 2, lrp.GetInstances())
	require.EqualValues(t, 64, lrp.GetMemoryMb())
	require.EqualValues(t, 256, lrp.GetDiskMb())

	setup := lrp.GetSetup().GetSerial().GetActions()
	require.Len(t, setup, 2)
	droplet := setup[0].GetDownload()
	require.Equal(t, "http://fs/v1/blobs/"+app.DropletKey(), droplet.GetFrom())
	require.Equal(t, "/home/vcap", droplet.GetTo())
	require.Equal(t, "droplet-"+app.ProcessGUID(), droplet.GetCacheKey())
	require.Equal(t, "sha256", droplet.GetChecksumAlgorithm())
	require.Equal(t, staged.GetDropletSha256(), droplet.GetChecksumValue())
	require.Equal(t, "vcap", droplet.GetUser(), "the droplet's files belong to the run user")
	lifecycle := setup[1].GetDownload()
	require.Equal(t, staged.GetLifecycleUrl(), lifecycle.GetFrom())
	require.Equal(t, "/tmp/lifecycle", lifecycle.GetTo())
	require.Equal(t, "lifecycle", lifecycle.GetCacheKey())

	run := lrp.GetAction().GetRun()
	require.Equal(t, "/tmp/lifecycle/launcher", run.GetPath())
	require.Equal(t, []string{"/home/vcap/app", "./start-nginx"}, run.GetArgs())
	require.Equal(t, "vcap", run.GetUser())
	wantEnv := []*modelsv1.EnvironmentVariable{{Name: "GREETING", Value: "hi"}, {Name: "EMPTY"}, {Name: "PORT", Value: "8080"}}
	require.Empty(t, cmpEnv(wantEnv, run.GetEnv()))
	require.Empty(t, cmpEnv(wantEnv, lrp.GetEnv()), "the app's env is on the LRP too")

	require.Equal(t, []uint32{8080}, lrp.GetPorts())
	require.EqualValues(t, 8080, lrp.GetCheckDefinition().GetChecks()[0].GetTcpCheck().GetPort())
	require.EqualValues(t, 60, lrp.GetStartTimeout())
	routes, err := json.Marshal(lrp.GetRoutes()["cf-router"].AsInterface())
	require.NoError(t, err)
	require.JSONEq(t, `[{"hostnames":["hello.example.com"],"port":8080}]`, string(routes))
	var annotation push.LRPAnnotation
	require.NoError(t, json.Unmarshal([]byte(lrp.GetAnnotation()), &annotation))
	require.Equal(t, push.LRPAnnotation{AppName: "hello", AppGUID: app.GUID(), Version: app.Version(),
		PackageSHA256: app.PackageSHA256, DropletKey: app.DropletKey(), Buildpack: "staticfile"}, annotation)
}

// cmpEnv describes how got differs from want ("" when equal).
func cmpEnv(want, got []*modelsv1.EnvironmentVariable) string {
	if len(want) != len(got) {
		return fmt.Sprintf("want %d variables, got %d: %v", len(want), len(got), got)
	}
	for i := range want {
		if want[i].GetName() != got[i].GetName() || want[i].GetValue() != got[i].GetValue() {
			return fmt.Sprintf("variable %d: want %s=%s, got %s=%s", i, want[i].GetName(), want[i].GetValue(), got[i].GetName(), got[i].GetValue())
		}
	}
	return ""
}

func TestStageRequest(t *testing.T) {
	app := testApp()
	app.Stack = "bookworm"
	app.Buildpacks = []string{"nodejs", "go"}
	app.Env = []push.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}
	req := push.StageRequest(app)
	require.Equal(t, app.GUID(), req.GetAppGuid())
	require.Equal(t, "hello", req.GetAppName())
	require.Equal(t, "packages/abc.zip", req.GetPackageKey())
	require.Equal(t, app.PackageSHA256, req.GetPackageSha256())
	require.Equal(t, "bookworm", req.GetStack())
	require.Equal(t, []string{"nodejs", "go"}, req.GetBuildpacks(), "in the order given")
	require.Len(t, req.GetEnv(), 2)
	require.Equal(t, "B", req.GetEnv()[0].GetName(), "in the order given")
	require.EqualValues(t, 64, req.GetMemoryMb())
	require.EqualValues(t, 256, req.GetDiskMb())
	require.Equal(t, app.DropletKey(), req.GetDropletKey())
}

func TestCheckStagingResult(t *testing.T) {
	require.NoError(t, push.CheckStagingResult(stagedResult(push.StageRequest(testApp()))))
	err := push.CheckStagingResult(&stagerv1.StagingResult{DropletKey: "d", Rootfs: "r"})
	require.EqualError(t, err, "the stager's result has no start_command, user, lifecycle_url")
	err = push.CheckStagingResult(&stagerv1.StagingResult{StartCommand: "x", User: "u", LifecycleUrl: "l"})
	require.EqualError(t, err, "the stager's result has no droplet_key, rootfs")
}

func TestCountInstances(t *testing.T) {
	running := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	claimed := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED
	crashed := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED
	evacuating := modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING
	tests := []struct {
		name        string
		actuals     []*modelsv1.ActualLRP
		want        int32
		running     int32
		crashedIdx  int32
		wantCrashed bool
	}{
		{name: "none", want: 2},
		{name: "one of two", actuals: []*modelsv1.ActualLRP{{Index: 0, State: running}, {Index: 1, State: claimed}}, want: 2, running: 1},
		{name: "all", actuals: []*modelsv1.ActualLRP{{Index: 0, State: running}, {Index: 1, State: running}}, want: 2, running: 2},
		{name: "extra index ignored", actuals: []*modelsv1.ActualLRP{{Index: 0, State: running}, {Index: 2, State: running}}, want: 2, running: 1},
		{name: "evacuating copy ignored", actuals: []*modelsv1.ActualLRP{{Index: 1, State: running, Presence: evacuating}}, want: 2, running: 0},
		{name: "crashed state", actuals: []*modelsv1.ActualLRP{{Index: 1, State: crashed}, {Index: 0, State: running}}, want: 2, running: 1, wantCrashed: true, crashedIdx: 1},
		{name: "running again after a crash", actuals: []*modelsv1.ActualLRP{{Index: 0, State: running, CrashCount: 1}}, want: 1, running: 0, wantCrashed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := push.CountInstances(tt.actuals, tt.want)
			require.Equal(t, tt.running, got.Running)
			require.Equal(t, tt.wantCrashed, got.Crashed != nil)
			if tt.wantCrashed {
				require.Equal(t, tt.crashedIdx, got.Crashed.GetIndex())
			}
		})
	}
}
