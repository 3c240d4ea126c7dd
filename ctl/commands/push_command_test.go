package commands_test

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/ctl/commands"
	"drover.dev/fileserver/signedurl"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

const testSigningKey = "0123456789abcdef-test-key"

// fakeFileserver answers resource matching (nothing known) and package uploads whose
// signature verifies with testSigningKey, recording the resource lists it received.
type fakeFileserver struct {
	mu        sync.Mutex
	resources [][]map[string]any
	refused   int
}

func startFakeFileserver(t *testing.T) (*fakeFileserver, string) {
	t.Helper()
	f := &fakeFileserver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/resource_match", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("[]"))
	})
	mux.HandleFunc("POST /v1/packages", func(w http.ResponseWriter, r *http.Request) {
		if err := signedurl.Verify([]byte(testSigningKey), "/v1/packages", r.URL.Query(), time.Now()); err != nil {
			f.mu.Lock()
			f.refused++
			f.mu.Unlock()
			http.Error(w, "invalid signature", http.StatusForbidden)
			return
		}
		var list []map[string]any
		if err := json.Unmarshal([]byte(r.FormValue("resources")), &list); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.resources = append(f.resources, list)
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"key":"packages/abc.zip","sha256":"abc","size":10,"received_files":1,"received_bytes":6,"reused_files":0}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// pushEnv is ft's env with a fileserver, its key in .drover/fileserver, a fake
// stager and an app dir.
func pushEnv(t *testing.T, ft *fakeTarget, fileserverURL string) (commands.Env, string, *fakeStager) {
	t.Helper()
	home := filepath.Join(filepath.Dir(filepath.Dir(ft.env.WorkDir)), ".drover")
	require.NoError(t, os.MkdirAll(filepath.Join(home, "fileserver"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "fileserver", "signing.key"), []byte(testSigningKey+"\n"), 0o600))
	app := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(app, "index.html"), []byte("hello\n"), 0o644))
	stager := startFakeStager(t, ft.pki, &fakeStager{
		events: stagedEvents,
		stacks: []*stagerv1.Stack{{Name: "busybox", Rootfs: "preloaded:busybox"}, {Name: "bookworm", Rootfs: "preloaded:bookworm", User: "vcap", Default: true}},
	})
	env := ft.env
	env.Vars = map[string]string{}
	for k, v := range ft.env.Vars {
		env.Vars[k] = v
	}
	env.Vars[commands.EnvFileserverURL] = fileserverURL
	env.Vars[commands.EnvStagerAddress] = stager.addr
	return env, app, stager
}

// stagedEvents is a successful staging of req by the staticfile buildpack.
func stagedEvents(req *stagerv1.StageRequest) []*stagerv1.StageResponse {
	stack := cmp.Or(req.GetStack(), "bookworm")
	return []*stagerv1.StageResponse{
		{Event: &stagerv1.StageResponse_Started{Started: &stagerv1.StagingStarted{TaskGuid: "staging-1", Stack: stack, Buildpacks: []string{"staticfile"}}}},
		{Event: &stagerv1.StageResponse_Log{Log: &repv1.LogLine{Source: "STG", Text: "-----> Staticfile Buildpack"}}},
		{Event: &stagerv1.StageResponse_Result{Result: &stagerv1.StagingResult{
			TaskGuid: "staging-1", DropletKey: req.GetDropletKey(), DropletSha256: strings.Repeat("a", 64), Buildpack: "staticfile",
			StartCommand: "./start", Stack: stack, Rootfs: "preloaded:" + stack, User: "vcap", LifecycleUrl: "http://fs/lifecycle.tgz",
		}}},
	}
}

func TestPushStagesThroughTheStager(t *testing.T) {
	ft := startFakeBBS(t, nil)
	_, url := startFakeFileserver(t)
	env, app, stager := pushEnv(t, ft, url)

	res := run(t, env, "push", app, "--name", "hello", "--wait=false", "-b", "staticfile", "--buildpack", "nodejs",
		"-e", "GREETING=hi, there", "--env", "EMPTY=", "--stack", "bookworm")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "Uploading 1 of 1 files (6B), 0 already on the server\n")
	require.Contains(t, res.stdout, "Staging hello with task staging-1 on stack bookworm (buildpacks: staticfile)\n"+
		"   [STG/0] -----> Staticfile Buildpack\n"+
		"Staged hello: staticfile buildpack, start command \"./start\"\n")

	var req *stagerv1.StageRequest
	for _, r := range stager.recorded() {
		if s, ok := r.(*stagerv1.StageRequest); ok {
			req = s
		}
	}
	require.NotNil(t, req)
	require.Equal(t, "hello", req.GetAppName())
	require.Equal(t, "packages/abc.zip", req.GetPackageKey())
	require.Equal(t, "abc", req.GetPackageSha256())
	require.Equal(t, "bookworm", req.GetStack())
	require.Equal(t, []string{"staticfile", "nodejs"}, req.GetBuildpacks())
	require.Len(t, req.GetEnv(), 2)
	require.Equal(t, "GREETING", req.GetEnv()[0].GetName())
	require.Equal(t, "hi, there", req.GetEnv()[0].GetValue(), "a comma stays in the value")
	require.EqualValues(t, 64, req.GetMemoryMb())

	var desired *bbsv1.DesireLRPRequest
	for _, r := range ft.bbs.recorded() {
		if d, ok := r.(*bbsv1.DesireLRPRequest); ok {
			desired = d
		}
	}
	require.NotNil(t, desired, "the LRP is desired")
	lrp := desired.GetDesiredLrp()
	require.Equal(t, "preloaded:bookworm", lrp.GetRootfs())
	require.Equal(t, "/tmp/lifecycle/launcher", lrp.GetAction().GetRun().GetPath())
	require.Equal(t, url+"/v1/blobs/"+req.GetDropletKey(), lrp.GetSetup().GetSerial().GetActions()[0].GetDownload().GetFrom())
}

func TestPushWithoutStackUsesTheStagersDefault(t *testing.T) {
	ft := startFakeBBS(t, nil)
	_, url := startFakeFileserver(t)
	env, app, stager := pushEnv(t, ft, url)
	res := run(t, env, "push", app, "--name", "hello", "--wait=false")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	reqs := stager.recorded()
	require.Len(t, reqs, 2)
	require.IsType(t, &stagerv1.ListStacksRequest{}, reqs[0])
	require.Equal(t, "bookworm", reqs[1].(*stagerv1.StageRequest).GetStack())
}

func TestPushStagingFailures(t *testing.T) {
	for _, tt := range []struct {
		name   string
		setup  func(*fakeStager)
		stderr string
	}{
		{"no cell serves the stack", func(f *fakeStager) {
			f.stageErr = status.Error(codes.FailedPrecondition, `no cell serves stack "nostack"`)
		},
			"droverctl: PushFailed: staging failed: no cell serves stack \"nostack\"\n"},
		{"unknown buildpack", func(f *fakeStager) {
			f.stageErr = status.Error(codes.InvalidArgument, `buildpack "nope" is not registered for stack "bookworm"`)
		}, "droverctl: PushFailed: staging failed: buildpack \"nope\" is not registered for stack \"bookworm\"\n"},
		{"compile failed", func(f *fakeStager) {
			f.events = func(*stagerv1.StageRequest) []*stagerv1.StageResponse {
				return []*stagerv1.StageResponse{{Event: &stagerv1.StageResponse_Failure{Failure: &stagerv1.StagingFailure{
					Reason: "buildpack nodejs: bin/compile exited with status 1", LastLines: []string{"npm ERR! bad json"}}}}}
			}
		}, "droverctl: PushFailed: staging failed: buildpack nodejs: bin/compile exited with status 1\n"},
		{"stream ends early", func(f *fakeStager) {
			f.events = func(req *stagerv1.StageRequest) []*stagerv1.StageResponse { return stagedEvents(req)[:2] }
		}, "droverctl: PushFailed: staging failed: the stager's stream ended without a result or failure\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ft := startFakeBBS(t, nil)
			_, url := startFakeFileserver(t)
			env, app, stager := pushEnv(t, ft, url)
			tt.setup(stager)
			res := run(t, env, "push", app, "--name", "hello", "--stack", "bookworm")
			require.Equal(t, commands.ExitFailure, res.code, res.stdout)
			require.Equal(t, tt.stderr, res.stderr)
			for _, r := range ft.bbs.recorded() {
				require.NotEqual(t, "DesireLRPRequest", string(r.ProtoReflect().Descriptor().Name()), "no LRP is desired")
			}
		})
	}
}

func TestPushUnreachableStager(t *testing.T) {
	ft := startFakeBBS(t, nil)
	_, url := startFakeFileserver(t)
	env, app, _ := pushEnv(t, ft, url)
	addr := unreachableAddress(t)
	res := run(t, env, "push", app, "--name", "hello", "--stack", "bookworm", "--stager", addr)
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "droverctl: PushFailed: staging failed: stager at "+addr+": ")
	require.NotContains(t, res.stderr, "rpc error")
}

func TestPushNeedsTheSigningKey(t *testing.T) {
	ft := startFakeBBS(t, nil)
	fs, url := startFakeFileserver(t)
	env, app, _ := pushEnv(t, ft, url)

	env.Vars[commands.EnvFileserverKey] = filepath.Join(t.TempDir(), "missing.key")
	res := run(t, env, "push", app, "--name", "hello")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "InvalidTarget: fileserver signing key: open ")

	short := filepath.Join(t.TempDir(), "short.key")
	require.NoError(t, os.WriteFile(short, []byte("short"), 0o600))
	res = run(t, env, "push", app, "--name", "hello", "--fileserver-key", short)
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "InvalidTarget: fileserver signing key: key must be at least 16 bytes, got 5 in "+short)

	wrong := filepath.Join(t.TempDir(), "wrong.key")
	require.NoError(t, os.WriteFile(wrong, []byte("another-key-of-enough-bytes"), 0o600))
	res = run(t, env, "push", app, "--name", "hello", "--fileserver-key", wrong)
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, "PushFailed: uploading package: fileserver: POST /v1/packages: 403 Forbidden: invalid signature")
	require.Equal(t, 1, fs.refused)
}
