package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestCellsTasks: a task's result_file becomes its result, a failing task completes
// failed with its reason, cancel stops a running task, an unprivileged task cannot
// mount or load kernel modules, and nothing is left on the host.
func TestCellsTasks(t *testing.T) {
	cs := newCellStack(t, 1, nil)

	t.Run("result file", func(t *testing.T) {
		cs.desireTask(t, "result", &modelsv1.TaskDefinition{
			Action:     shAction(`echo "hello from the task" > /tmp/result`),
			ResultFile: "/tmp/result",
		})
		task := cs.waitTaskCompleted(t, "result")
		require.False(t, task.GetFailed(), task.GetFailureReason())
		require.Equal(t, "hello from the task", strings.TrimSpace(task.GetResult()))
	})

	t.Run("failing", func(t *testing.T) {
		cs.desireTask(t, "failing", &modelsv1.TaskDefinition{Action: shAction("exit 3")})
		task := cs.waitTaskCompleted(t, "failing")
		require.True(t, task.GetFailed())
		require.Contains(t, task.GetFailureReason(), "3", "reason %q names the exit status", task.GetFailureReason())
	})

	t.Run("cancel", func(t *testing.T) {
		marker := "DROVER_TEST_TASK=long"
		cs.desireTask(t, "long", &modelsv1.TaskDefinition{
			Action: shAction("exec sleep 1000"),
			Env:    []*modelsv1.EnvironmentVariable{{Name: "DROVER_TEST_TASK", Value: "long"}},
		})
		cs.waitTask(t, "long", "running", func(task *modelsv1.Task) bool {
			return task.GetState() == modelsv1.TaskState_TASK_STATE_RUNNING
		})
		require.Eventually(t, func() bool { return len(envPids(marker, "sleep")) > 0 }, settleWait, cellPoll,
			"the task's process never showed")
		_, err := cs.bbs.CancelTask(callCtx(t), &bbsv1.CancelTaskRequest{TaskGuid: "long"})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(envPids(marker, "")) == 0 }, settleWait, cellPoll,
			"the cancelled task's processes still run")
	})

	t.Run("unprivileged cannot mount", func(t *testing.T) {
		cs.desireTask(t, "mounter", &modelsv1.TaskDefinition{
			Privileged: false,
			Action:     shAction(`mkdir -p /tmp/m; if mount -t tmpfs none /tmp/m 2>/dev/null; then echo mounted; else echo refused; fi > /tmp/r`),
			ResultFile: "/tmp/r",
		})
		task := cs.waitTaskCompleted(t, "mounter")
		require.False(t, task.GetFailed(), task.GetFailureReason())
		require.Equal(t, "refused", strings.TrimSpace(task.GetResult()))
	})

	// init_module on a junk file: policy (no CAP_SYS_MODULE, seccomp) refuses it with
	// EPERM in an unprivileged container; a privileged one gets past the policy and the
	// kernel itself rejects the junk (bad format, or no module support at all).
	insmod := shAction(`echo junk > /tmp/x.ko; insmod /tmp/x.ko > /tmp/r 2>&1; true`)
	t.Run("unprivileged cannot load modules", func(t *testing.T) {
		cs.desireTask(t, "insmod", &modelsv1.TaskDefinition{Privileged: false, Action: insmod, ResultFile: "/tmp/r"})
		task := cs.waitTaskCompleted(t, "insmod")
		require.False(t, task.GetFailed(), task.GetFailureReason())
		require.Contains(t, task.GetResult(), "not permitted")
	})
	t.Run("privileged gets past the module policy", func(t *testing.T) {
		cs.desireTask(t, "insmod-privileged", &modelsv1.TaskDefinition{Privileged: true, Action: insmod, ResultFile: "/tmp/r"})
		task := cs.waitTaskCompleted(t, "insmod-privileged")
		require.False(t, task.GetFailed(), task.GetFailureReason())
		require.NotContains(t, task.GetResult(), "not permitted")
		require.Contains(t, task.GetResult(), "can't insert")
	})

	cs.requireHostClean(t)
}

// TestCellsDownloads: a tgz from a local server lands in the container, a wrong
// checksum fails with a reason saying so, and a second download with the same cache_key
// is served from the cache.
func TestCellsDownloads(t *testing.T) {
	archive := tgz(t, map[string]string{"hello.txt": "hello from the archive\n"})
	sum := sha256.Sum256(archive)
	// hits counts full downloads; a cache revalidating with If-None-Match gets a 304.
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		hits.Add(1)
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(archive)
	}))
	t.Cleanup(srv.Close)
	cs := newCellStack(t, 1, nil)

	download := func(cacheKey, checksum string) *modelsv1.Action {
		return &modelsv1.Action{Action: &modelsv1.Action_Download{Download: &modelsv1.DownloadAction{
			From: srv.URL + "/app.tgz", To: "/tmp/app", CacheKey: cacheKey, User: "root",
			ChecksumAlgorithm: "sha256", ChecksumValue: checksum,
		}}}
	}
	serial := func(actions ...*modelsv1.Action) *modelsv1.Action {
		return &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{Actions: actions}}}
	}
	good := hex.EncodeToString(sum[:])

	cs.desireTask(t, "download-1", &modelsv1.TaskDefinition{
		Action:     serial(download("app-v1", good), shAction("cat /tmp/app/hello.txt > /tmp/r")),
		ResultFile: "/tmp/r",
	})
	task := cs.waitTaskCompleted(t, "download-1")
	require.False(t, task.GetFailed(), task.GetFailureReason())
	require.Equal(t, "hello from the archive", strings.TrimSpace(task.GetResult()))
	require.Equal(t, int32(1), hits.Load())

	cs.desireTask(t, "download-2", &modelsv1.TaskDefinition{
		Action:     serial(download("app-v1", good), shAction("cat /tmp/app/hello.txt > /tmp/r")),
		ResultFile: "/tmp/r",
	})
	task = cs.waitTaskCompleted(t, "download-2")
	require.False(t, task.GetFailed(), task.GetFailureReason())
	require.Equal(t, "hello from the archive", strings.TrimSpace(task.GetResult()))
	require.Equal(t, int32(1), hits.Load(), "the second download with the same cache_key fetched the body again")

	cs.desireTask(t, "bad-checksum", &modelsv1.TaskDefinition{
		Action: serial(download("", strings.Repeat("0", 64)), shAction("true")),
	})
	task = cs.waitTaskCompleted(t, "bad-checksum")
	require.True(t, task.GetFailed())
	require.Contains(t, strings.ToLower(task.GetFailureReason()), "checksum")
	cs.requireHostClean(t)
}

// tgz builds a gzipped tar of files.
func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}
