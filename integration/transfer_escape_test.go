package integration

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"drover.dev/devstack"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// swapperBinary is the test tool that swaps a directory for a symlink in a container.
var swapperBinary = devstack.Binary{Name: "symlinkswapper", Package: "./executor/internal/symlinkswapper"}

// transferServer serves the archives the tasks download and keeps what they upload.
type transferServer struct {
	srv      *httptest.Server
	archives map[string][]byte

	mu      sync.Mutex
	uploads map[string][]byte
}

func newTransferServer(t *testing.T, archives map[string][]byte) *transferServer {
	t.Helper()
	ts := &transferServer{archives: archives, uploads: map[string][]byte{}}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *transferServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/upload/") {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ts.mu.Lock()
		ts.uploads[r.URL.Path] = body
		ts.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		return
	}
	data, ok := ts.archives[strings.TrimPrefix(r.URL.Path, "/")]
	if r.Method != http.MethodGet || !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// Uploads returns a copy of what was uploaded, by path.
func (ts *transferServer) Uploads() map[string][]byte {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make(map[string][]byte, len(ts.uploads))
	for k, v := range ts.uploads {
		out[k] = v
	}
	return out
}

func (ts *transferServer) url(p string) string { return ts.srv.URL + "/" + p }

// TestTransfersCannotLeaveTheContainer: tasks whose background process keeps swapping a
// directory for a symlink to a host directory while downloads go into it, uploads come
// out of it and the result_file is read from it never bring back the host's canary and
// never write to the host; a tar and a zip with an escaping entry fail alike.
func TestTransfersCannotLeaveTheContainer(t *testing.T) {
	root, err := devstack.FindRoot()
	require.NoError(t, err)
	binDir := t.TempDir()
	require.NoError(t, devstack.Build(t.Context(), root, binDir, swapperBinary))
	swapper, err := os.ReadFile(filepath.Join(binDir, swapperBinary.Name))
	require.NoError(t, err)

	hostDir := t.TempDir()
	canary := "canary-" + randomHex(t)
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "canary"), []byte(canary), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(hostDir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "sub", "canary"), []byte(canary), 0o644))

	ts := newTransferServer(t, map[string][]byte{
		"swapper.tgz": tgzEntries(t, tarFile{name: "symlinkswapper", body: string(swapper), mode: 0o755}),
		"payload.tgz": tgzEntries(t, tarFile{name: "in.txt", body: "in"}, tarFile{name: "new/", dir: true},
			tarFile{name: "new/f", body: "f"}, tarFile{name: "new/l", link: "f"}),
		"dotdot.tgz":   tgzEntries(t, tarFile{name: "ok.txt", body: "ok"}, tarFile{name: "../evil", body: "evil"}),
		"dotdot.zip":   zipEntries(t, tarFile{name: "ok.txt", body: "ok"}, tarFile{name: "../evil", body: "evil"}),
		"absolute.tgz": tgzEntries(t, tarFile{name: "/etc/evil", body: "evil"}),
		"absolute.zip": zipEntries(t, tarFile{name: "/etc/evil", body: "evil"}),
		"symlink.tgz":  tgzEntries(t, tarFile{name: "etc", link: "/etc"}),
		"symlink.zip":  zipEntries(t, tarFile{name: "etc", link: "/etc"}),
	})
	cs := newCellStack(t, 1, nil)

	const tasks, rounds = 6, 20
	for i := range tasks {
		cs.desireTask(t, fmt.Sprintf("swap-%d", i), swapTask(ts, fmt.Sprintf("swap-%d", i), hostDir, rounds))
	}
	escapes := []string{"dotdot", "absolute", "symlink"}
	for _, name := range escapes {
		for _, ext := range []string{"tgz", "zip"} {
			cs.desireTask(t, "escape-"+name+"-"+ext, &modelsv1.TaskDefinition{Action: serialOf(
				downloadAction(ts.url(name+"."+ext), "/home/vcap/app"),
				shAction("true"),
			)})
		}
	}

	decoys := 0
	for i := range tasks {
		task := cs.waitTaskCompleted(t, fmt.Sprintf("swap-%d", i))
		require.NotContains(t, task.GetResult(), canary, "the result of task %d is the host's canary", i)
		require.NotContains(t, task.GetFailureReason(), "/proc/", "task %d", i)
		if strings.Contains(task.GetResult(), "decoy") {
			decoys++
		}
	}
	uploads := ts.Uploads()
	swaps := 0
	for p, body := range uploads {
		require.NotContains(t, string(body), canary, "upload %s is the host's canary", p)
		if strings.HasSuffix(p, "/swaps") {
			n, _ := strconv.Atoi(strings.TrimSpace(string(body)))
			swaps += n
		} else if strings.Contains(string(body), "decoy") {
			decoys++
		}
	}
	t.Logf("%d uploads, %d swaps, %d decoys came back", len(uploads), swaps, decoys)
	require.Positive(t, swaps, "the swappers ran during the transfers")
	require.Positive(t, decoys, "some transfers went through the directory")

	var onHost []string
	require.NoError(t, filepath.WalkDir(hostDir, func(p string, _ os.DirEntry, err error) error {
		onHost = append(onHost, strings.TrimPrefix(p, hostDir))
		return err
	}))
	require.Equal(t, []string{"", "/canary", "/sub", "/sub/canary"}, onHost, "nothing was written to the host")

	for _, name := range escapes {
		tarTask := cs.waitTaskCompleted(t, "escape-"+name+"-tgz")
		zipTask := cs.waitTaskCompleted(t, "escape-"+name+"-zip")
		require.True(t, tarTask.GetFailed(), "the tar with a %s entry was extracted", name)
		require.True(t, zipTask.GetFailed(), "the zip with a %s entry was extracted", name)
		assert.Contains(t, tarTask.GetFailureReason(), "archive entry ")
		assert.Equal(t, tarTask.GetFailureReason(), zipTask.GetFailureReason(), "tar and zip are refused alike")
		assert.NotContains(t, tarTask.GetFailureReason(), "/proc/")
	}
	cs.requireHostClean(t)
}

// swapTask starts the swapper in the background, then runs rounds of a download into
// the swapped directory and uploads out of it, each allowed to fail; the swap count is
// uploaded last and the result_file lies in the swapped directory.
func swapTask(ts *transferServer, guid, hostDir string, rounds int) *modelsv1.TaskDefinition {
	actions := []*modelsv1.Action{
		downloadAction(ts.url("swapper.tgz"), "/home/vcap/tools"),
		{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/sh", User: "vcap", Args: []string{"-c",
			"/home/vcap/tools/symlinkswapper /home/vcap/d " + hostDir + " /tmp/swaps >/tmp/swapper.log 2>&1 &\n" +
				"while [ ! -s /tmp/swaps ]; do sleep 0.05; done"}}}},
	}
	for i := range rounds {
		up := func(from, name string) *modelsv1.Action {
			return tryAction(&modelsv1.Action{Action: &modelsv1.Action_Upload{Upload: &modelsv1.UploadAction{
				From: from, To: ts.url(fmt.Sprintf("upload/%s/%d/%s", guid, i, name)), User: "vcap"}}})
		}
		actions = append(actions,
			tryAction(downloadAction(ts.url("payload.tgz"), "/home/vcap/d/sub")),
			up("/home/vcap/d/canary", "canary"),
			up("/home/vcap/d/sub/canary", "sub-canary"))
	}
	actions = append(actions, &modelsv1.Action{Action: &modelsv1.Action_Upload{Upload: &modelsv1.UploadAction{
		From: "/tmp/swaps", To: ts.url("upload/" + guid + "/swaps"), User: "vcap"}}})
	return &modelsv1.TaskDefinition{Action: serialOf(actions...), ResultFile: "/home/vcap/d/canary"}
}

// downloadAction downloads from into to as vcap, cached under the file's name.
func downloadAction(from, to string) *modelsv1.Action {
	key := "transfer-" + strings.NewReplacer(".", "-").Replace(from[strings.LastIndex(from, "/")+1:])
	return &modelsv1.Action{Action: &modelsv1.Action_Download{Download: &modelsv1.DownloadAction{
		From: from, To: to, User: "vcap", CacheKey: key}}}
}

func tryAction(a *modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Try{Try: &modelsv1.TryAction{Action: a}}}
}

func serialOf(actions ...*modelsv1.Action) *modelsv1.Action {
	return &modelsv1.Action{Action: &modelsv1.Action_Serial{Serial: &modelsv1.SerialAction{Actions: actions}}}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// tarFile is one entry of a test archive: a file, a directory or a symlink.
type tarFile struct {
	name, body, link string
	dir              bool
	mode             int64
}

// tgzEntries builds a gzipped tar of files.
func tgzEntries(t *testing.T, files ...tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f.body))}
		switch {
		case f.dir:
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		case f.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, f.link, 0
		}
		if f.mode != 0 {
			hdr.Mode = f.mode
		}
		require.NoError(t, tw.WriteHeader(hdr))
		_, err := tw.Write([]byte(f.body[:hdr.Size]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// zipEntries builds a zip of files.
func zipEntries(t *testing.T, files ...tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		hdr := &zip.FileHeader{Name: f.name, Method: zip.Deflate}
		body := f.body
		switch {
		case f.dir:
			hdr.SetMode(os.ModeDir | 0o755)
		case f.link != "":
			hdr.SetMode(os.ModeSymlink | 0o777)
			body = f.link
		default:
			hdr.SetMode(0o644)
		}
		w, err := zw.CreateHeader(hdr)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
