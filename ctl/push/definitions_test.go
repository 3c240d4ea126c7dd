package push_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	"drover.dev/ctl/push"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// fakeURLs are fileserver URLs under http://fs.
type fakeURLs struct{}

func (fakeURLs) BlobURL(key string) string    { return "http://fs/v1/blobs/" + key }
func (fakeURLs) StaticURL(path string) string { return "http://fs/v1/static/" + path }
func (fakeURLs) SignedUploadURL(key string, ttl time.Duration) string {
	return fmt.Sprintf("http://fs/v1/blobs/%s?ttl=%s", key, ttl)
}

func testApp() push.App {
	return push.App{Name: "hello", Stack: "busybox", Instances: 2, MemoryMB: 64, DiskMB: 256, Domain: "example.com",
		PackageKey: "packages/abc.zip", PackageSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
}

func TestStagingTaskPassesBBSValidation(t *testing.T) {
	app := testApp()
	guid, err := push.StagingTaskGUID(app, bytes.NewReader([]byte{0xab, 0xcd, 0xef}))
	require.NoError(t, err)
	require.Equal(t, "staging-"+app.Version()+"-abcdef", guid)

	def := push.StagingTask(app, fakeURLs{})
	require.NoError(t, models.ValidateRequest(&bbsv1.DesireTaskRequest{TaskGuid: guid, Domain: push.StagingDomain, TaskDefinition: def}))
	require.Equal(t, "preloaded:busybox", def.GetRootfs())
	require.Equal(t, "/tmp/result.json", def.GetResultFile())
	require.Equal(t, app.GUID(), def.GetLogGuid())
	require.Equal(t, "STG", def.GetLogSource())
	require.EqualValues(t, 256, def.GetMemoryMb())
	require.EqualValues(t, 1024, def.GetDiskMb())

	steps := def.GetAction().GetSerial().GetActions()
	require.Len(t, steps, 4)
	pkg := steps[0].GetDownload()
	require.Equal(t, "http://fs/v1/blobs/packages/abc.zip", pkg.GetFrom())
	require.Equal(t, "/tmp/app", pkg.GetTo())
	require.Equal(t, app.PackageSHA256, pkg.GetChecksumValue())
	builder := steps[1].GetDownload()
	require.Equal(t, "http://fs/v1/static/busybox/builder.tgz", builder.GetFrom())
	require.Equal(t, "/tmp/builder", builder.GetTo())
	require.Equal(t, "builder-busybox", builder.GetCacheKey())
	run := steps[2].GetRun()
	require.Equal(t, "/tmp/builder/builder", run.GetPath())
	require.Equal(t, []string{"/tmp/app", "/tmp/droplet.tgz", "/tmp/result.json"}, run.GetArgs())
	require.Equal(t, "root", run.GetUser())
	upload := steps[3].GetUpload()
	require.Equal(t, "/tmp/droplet.tgz", upload.GetFrom())
	require.Equal(t, "http://fs/v1/blobs/droplets/"+app.GUID()+"/"+app.Version()+".tgz?ttl=30m0s", upload.GetTo())

	var annotation map[string]string
	require.NoError(t, json.Unmarshal([]byte(def.GetAnnotation()), &annotation))
	require.Equal(t, map[string]string{"app_name": "hello", "app_guid": app.GUID(), "version": app.Version()}, annotation)
}

func TestDesiredLRPPassesBBSValidation(t *testing.T) {
	app := testApp()
	staged := push.StagingResult{DetectedType: "static", StartCommand: "exec httpd -f -v -p $PORT -h /home/vcap/app"}
	for _, sum := range []string{"", "d2a84f4b8b650937ec8f73cd8be2c74add5a911ba64df27458ed8229da804a26"} {
		lrp := push.DesiredLRP(app, staged, push.Droplet{URL: "http://fs/v1/blobs/d.tgz", SHA256: sum})
		require.NoError(t, models.ValidateRequest(&bbsv1.DesireLRPRequest{DesiredLrp: lrp}))
		require.Equal(t, app.ProcessGUID(), lrp.GetProcessGuid())
		require.Equal(t, "apps", lrp.GetDomain())
		require.EqualValues(t, 2, lrp.GetInstances())
		require.EqualValues(t, 64, lrp.GetMemoryMb())
		require.EqualValues(t, 256, lrp.GetDiskMb())
		setup := lrp.GetSetup().GetDownload()
		require.Equal(t, "/home/vcap", setup.GetTo())
		require.Equal(t, "droplet-"+app.ProcessGUID(), setup.GetCacheKey())
		require.Equal(t, sum, setup.GetChecksumValue())
		if sum != "" {
			require.Equal(t, "sha256", setup.GetChecksumAlgorithm())
		}
		run := lrp.GetAction().GetRun()
		require.Equal(t, "/bin/sh", run.GetPath())
		require.Equal(t, []string{"-c", "cd /home/vcap/app && " + staged.StartCommand}, run.GetArgs())
		require.Equal(t, []uint32{8080}, lrp.GetPorts())
		require.EqualValues(t, 8080, lrp.GetCheckDefinition().GetChecks()[0].GetTcpCheck().GetPort())
		require.EqualValues(t, 60, lrp.GetStartTimeout())
		routes, err := json.Marshal(lrp.GetRoutes()["cf-router"].AsInterface())
		require.NoError(t, err)
		require.JSONEq(t, `[{"hostnames":["hello.example.com"],"port":8080}]`, string(routes))
		var annotation push.LRPAnnotation
		require.NoError(t, json.Unmarshal([]byte(lrp.GetAnnotation()), &annotation))
		require.Equal(t, push.LRPAnnotation{AppName: "hello", AppGUID: app.GUID(), Version: app.Version(),
			PackageSHA256: app.PackageSHA256, DropletKey: app.DropletKey()}, annotation)
	}
}

func TestParseStagingResult(t *testing.T) {
	r, err := push.ParseStagingResult(`{"lifecycle_type":"busybox","detected_type":"shell","start_command":"sh start.sh","process_types":{"web":"sh start.sh"}}`)
	require.NoError(t, err)
	require.Equal(t, "shell", r.DetectedType)
	require.Equal(t, "sh start.sh", r.StartCommand)

	r, err = push.ParseStagingResult(`{"start_command":"a","process_types":{"web":"b"}}`)
	require.NoError(t, err)
	require.Equal(t, "b", r.StartCommand, "the web process type wins")

	_, err = push.ParseStagingResult(`{"detected_type":"static"}`)
	require.ErrorContains(t, err, "no start_command")
	_, err = push.ParseStagingResult(`not json`)
	require.ErrorContains(t, err, "not JSON")
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
