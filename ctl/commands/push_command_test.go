package commands_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/commands"
	"drover.dev/fileserver/signedurl"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
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

// pushEnv is ft's env with a fileserver, its key in .drover/fileserver and an app dir.
func pushEnv(t *testing.T, ft *fakeTarget, fileserverURL string) (commands.Env, string) {
	t.Helper()
	home := filepath.Join(filepath.Dir(filepath.Dir(ft.env.WorkDir)), ".drover")
	require.NoError(t, os.MkdirAll(filepath.Join(home, "fileserver"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "fileserver", "signing.key"), []byte(testSigningKey+"\n"), 0o600))
	app := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(app, "index.html"), []byte("hello\n"), 0o644))
	env := ft.env
	env.Vars = map[string]string{}
	for k, v := range ft.env.Vars {
		env.Vars[k] = v
	}
	env.Vars[commands.EnvFileserverURL] = fileserverURL
	return env, app
}

func TestPushStagingOnAStackNoCellServes(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.onDesireTask = func(task *modelsv1.Task) {
			task.State, task.Failed = modelsv1.TaskState_TASK_STATE_COMPLETED, true
			task.FailureReason = "found no compatible cell for required rootfs preloaded:busybox"
		}
	})
	fs, url := startFakeFileserver(t)
	env, app := pushEnv(t, ft, url)

	res := run(t, env, "push", app, "--name", "hello")
	require.Equal(t, commands.ExitFailure, res.code, res.stdout)
	require.Equal(t, "droverctl: PushFailed: staging failed: no cell serves stack \"busybox\" (rootfs preloaded:busybox)\n", res.stderr)
	require.Contains(t, res.stdout, "Uploading 1 of 1 files (6B), 0 already on the server\n")
	require.Empty(t, ft.bbs.taskList(), "the staging task is deleted")
	require.Equal(t, [][]map[string]any{{{"fn": "index.html", "sha1": "f572d396fae9206628714fb2ce00f72e94f2258f", "size": float64(6), "mode": "0644"}}}, fs.resources)

	var desired *bbsv1.DesireTaskRequest
	for _, r := range ft.bbs.recorded() {
		if d, ok := r.(*bbsv1.DesireTaskRequest); ok {
			desired = d
		}
	}
	require.NotNil(t, desired)
	require.Equal(t, "staging", desired.GetDomain())
	require.Equal(t, url+"/v1/blobs/packages/abc.zip", desired.GetTaskDefinition().GetAction().GetSerial().GetActions()[0].GetDownload().GetFrom())
}

func TestPushNeedsTheSigningKey(t *testing.T) {
	ft := startFakeBBS(t, nil)
	fs, url := startFakeFileserver(t)
	env, app := pushEnv(t, ft, url)

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
