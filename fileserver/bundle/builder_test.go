package bundle_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests run the real busybox builder script (bundles/busybox/builder) on the host
// against the example apps in examples/, and then run the droplets it produces.

const (
	busyboxBin     = "/usr/bin/busybox"
	staticStart    = `exec httpd -f -v -p $PORT -h "${APP_ROOT:-/home/vcap/app}"`
	shellStart     = "sh start.sh"
	noAppMessage   = "builder: no app detected: need start.sh (shell app) or index.html (static site)"
	emptyStartMsg  = "builder: start.sh is empty"
	usageMessage   = "builder: usage: builder APP_DIR DROPLET_TGZ RESULT_JSON"
	serveTimeout   = 10 * time.Second
	builderTimeout = 30 * time.Second
)

var (
	builderScript = filepath.Join("..", "bundles", "busybox", "builder")
	examplesDir   = filepath.Join("..", "..", "examples")
)

// stagingResult is the builder's result file.
type stagingResult struct {
	LifecycleType string            `json:"lifecycle_type"`
	DetectedType  string            `json:"detected_type"`
	StartCommand  string            `json:"start_command"`
	ProcessTypes  map[string]string `json:"process_types"`
}

// stagingInfo is staging_info.json at the droplet's root.
type stagingInfo struct {
	DetectedType string `json:"detected_type"`
	StartCommand string `json:"start_command"`
}

// builderRun is the outcome of one builder invocation.
type builderRun struct {
	exitCode       int
	stdout, stderr string
	droplet        string
	result         string
}

func requireBusybox(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(busyboxBin); err != nil {
		t.Fatalf("%s is missing (apt-get install busybox-static): %v", busyboxBin, err)
	}
}

// runBuilder runs `busybox sh builder args...`, returning its exit code and output.
func runBuilder(t *testing.T, args ...string) builderRun {
	t.Helper()
	requireBusybox(t)
	cmd := exec.Command(busyboxBin, append([]string{"sh", builderScript}, args...)...)
	cmd.Env = []string{"PATH=" + busyboxApplets(t), "TMPDIR=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(builderTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("builder did not finish within %s; stdout:\n%s\nstderr:\n%s", builderTimeout, stdout.String(), stderr.String())
	}
	run := builderRun{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		run.exitCode = exitErr.ExitCode()
	default:
		t.Fatalf("running builder: %v", err)
	}
	return run
}

// stage runs the builder on appDir with outputs in a fresh temp dir.
func stage(t *testing.T, appDir string) builderRun {
	t.Helper()
	out := t.TempDir()
	droplet := filepath.Join(out, "droplet.tgz")
	result := filepath.Join(out, "result.json")
	run := runBuilder(t, appDir, droplet, result)
	run.droplet, run.result = droplet, result
	return run
}

// busyboxApplets returns a directory of symlinks to every busybox applet, standing in
// for the preloaded:busybox rootfs's PATH.
func busyboxApplets(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command(busyboxBin, "--list").Output()
	require.NoError(t, err, "listing busybox applets")
	for _, applet := range strings.Fields(string(out)) {
		if strings.ContainsRune(applet, '/') {
			continue
		}
		require.NoError(t, os.Symlink(busyboxBin, filepath.Join(dir, applet)))
	}
	return dir
}

// dropletEntries lists the droplet's entry names with `busybox tar -tzf`, sorted.
func dropletEntries(t *testing.T, droplet string) []string {
	t.Helper()
	out, err := exec.Command(busyboxBin, "tar", "-tzf", droplet).CombinedOutput()
	require.NoError(t, err, "listing %s: %s", droplet, out)
	names := strings.Fields(string(out))
	sort.Strings(names)
	return names
}

// extractDroplet unpacks the droplet like a cell does into /home/vcap and returns that dir.
func extractDroplet(t *testing.T, droplet string) string {
	t.Helper()
	home := t.TempDir()
	out, err := exec.Command(busyboxBin, "tar", "-xzf", droplet, "-C", home).CombinedOutput()
	require.NoError(t, err, "extracting %s: %s", droplet, out)
	return home
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), "parsing %s: %s", path, data)
}

func TestBuilderStagesExamples(t *testing.T) {
	tests := []struct {
		app      string
		detected string
		start    string
		progress string
		entries  []string
	}{
		{
			app: "static-site", detected: "static", start: staticStart,
			progress: "-----> Detected static site",
			entries:  []string{"app/", "app/index.html", "app/style.css", "staging_info.json"},
		},
		{
			app: "shell-app", detected: "shell", start: shellStart,
			progress: "-----> Detected shell app",
			entries:  []string{"app/", "app/start.sh", "staging_info.json"},
		},
		{
			app: "crashing-app", detected: "shell", start: shellStart,
			progress: "-----> Detected shell app",
			entries:  []string{"app/", "app/start.sh", "staging_info.json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.app, func(t *testing.T) {
			run := stage(t, filepath.Join(examplesDir, tt.app))
			require.Equal(t, 0, run.exitCode, "stdout:\n%s\nstderr:\n%s", run.stdout, run.stderr)
			require.Contains(t, run.stdout, tt.progress)
			require.Regexp(t, `(?m)^-----> Droplet: \d+K$`, run.stdout)
			require.Contains(t, run.stdout, "-----> Start command: "+tt.start)

			var result stagingResult
			readJSON(t, run.result, &result)
			require.Equal(t, stagingResult{
				LifecycleType: "busybox",
				DetectedType:  tt.detected,
				StartCommand:  tt.start,
				ProcessTypes:  map[string]string{"web": tt.start},
			}, result)

			require.Equal(t, tt.entries, dropletEntries(t, run.droplet))
			var info stagingInfo
			readJSON(t, filepath.Join(extractDroplet(t, run.droplet), "staging_info.json"), &info)
			require.Equal(t, stagingInfo{DetectedType: tt.detected, StartCommand: tt.start}, info)
		})
	}
}

func TestBuilderKeepsExecutableBits(t *testing.T) {
	run := stage(t, filepath.Join(examplesDir, "shell-app"))
	require.Equal(t, 0, run.exitCode, run.stderr)
	info, err := os.Stat(filepath.Join(extractDroplet(t, run.droplet), "app", "start.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), info.Mode().Perm())
}

func TestBuilderRefusals(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		exitCode int
		stderr   string
	}{
		{name: "broken-app example", exitCode: 222, stderr: noAppMessage},
		{name: "empty dir", files: map[string]string{}, exitCode: 222, stderr: noAppMessage},
		{name: "empty start.sh", files: map[string]string{"start.sh": "", "index.html": "hi"}, exitCode: 223, stderr: emptyStartMsg},
		{name: "blank start.sh", files: map[string]string{"start.sh": " \n\t\n"}, exitCode: 223, stderr: emptyStartMsg},
		{name: "index.html is a directory", files: map[string]string{"index.html/": ""}, exitCode: 222, stderr: noAppMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := filepath.Join(examplesDir, "broken-app")
			if tt.files != nil {
				app = t.TempDir()
				writeTree(t, app, tt.files, nil)
			}
			run := stage(t, app)
			require.Equal(t, tt.exitCode, run.exitCode, "stdout:\n%s\nstderr:\n%s", run.stdout, run.stderr)
			require.Equal(t, tt.stderr+"\n", run.stderr)
			requireOnlyFiles(t, filepath.Dir(run.droplet)) // no droplet, result or work dir
		})
	}
}

func TestBuilderUsageErrors(t *testing.T) {
	out := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "no args", stderr: usageMessage},
		{name: "two args", args: []string{out, filepath.Join(out, "d.tgz")}, stderr: usageMessage},
		{name: "four args", args: []string{out, "a", "b", "c"}, stderr: usageMessage},
		{name: "empty arg", args: []string{out, "", filepath.Join(out, "r.json")}, stderr: usageMessage},
		{name: "missing app dir", args: []string{filepath.Join(out, "nope"), filepath.Join(out, "d.tgz"), filepath.Join(out, "r.json")},
			stderr: "builder: app directory not found: " + filepath.Join(out, "nope")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := runBuilder(t, tt.args...)
			require.Equal(t, 1, run.exitCode, "stdout:\n%s\nstderr:\n%s", run.stdout, run.stderr)
			require.Equal(t, tt.stderr+"\n", run.stderr)
		})
	}
	requireOnlyFiles(t, out)
}

func TestBuilderCreatesOutputDirectories(t *testing.T) {
	out := t.TempDir()
	droplet := filepath.Join(out, "a", "droplet.tgz")
	result := filepath.Join(out, "b", "c", "result.json")
	run := runBuilder(t, filepath.Join(examplesDir, "static-site"), droplet, result)
	require.Equal(t, 0, run.exitCode, run.stderr)
	require.FileExists(t, droplet)
	require.FileExists(t, result)
	requireOnlyFiles(t, filepath.Join(out, "a"), "droplet.tgz")
}

func TestStaticSiteDropletServes(t *testing.T) {
	run := stage(t, filepath.Join(examplesDir, "static-site"))
	require.Equal(t, 0, run.exitCode, run.stderr)
	app := startDroplet(t, run, 0)

	body := waitForBody(t, app, "/", "Hello from drover")
	require.Contains(t, body, "<title>drover static site</title>")
	require.Contains(t, waitForBody(t, app, "/style.css", "font-family"), "h1")
}

func TestShellAppDropletServes(t *testing.T) {
	run := stage(t, filepath.Join(examplesDir, "shell-app"))
	require.Equal(t, 0, run.exitCode, run.stderr)
	app := startDroplet(t, run, 3)

	waitForBody(t, app, "/", fmt.Sprintf("shell app instance 3 on port %d", app.port))
	waitForBody(t, app, "/cgi-bin/instance", fmt.Sprintf("shell app instance 3 on port %d, uptime ", app.port))
}

func TestCrashingAppDropletExits(t *testing.T) {
	run := stage(t, filepath.Join(examplesDir, "crashing-app"))
	require.Equal(t, 0, run.exitCode, run.stderr)
	app := startDroplet(t, run, 0)

	select {
	case err := <-app.exited:
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr)
		require.Equal(t, 3, exitErr.ExitCode())
		require.Contains(t, app.stdout.String(), "crashing on purpose")
	case <-time.After(serveTimeout):
		t.Fatalf("crashing-app still running after %s", serveTimeout)
	}
}

// runningApp is a droplet's start command running on the host.
type runningApp struct {
	port           int
	exited         chan error // receives cmd.Wait's result once
	stdout, stderr *bytes.Buffer
}

// startDroplet extracts the staged droplet like a cell does and runs its start command
// as `sh -c "cd <home>/app && <start_command>"` with busybox applets as PATH, PORT set to
// a free port and APP_ROOT pointing at the extracted app. The process group is killed when
// the test ends.
func startDroplet(t *testing.T, run builderRun, index int) *runningApp {
	t.Helper()
	var result stagingResult
	readJSON(t, run.result, &result)
	appRoot := filepath.Join(extractDroplet(t, run.droplet), "app")

	app := &runningApp{port: freePort(t), exited: make(chan error, 1), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	cmd := exec.Command(busyboxBin, "sh", "-c", `cd "$APP_ROOT" && `+result.StartCommand)
	cmd.Env = []string{
		"PATH=" + busyboxApplets(t),
		"HOME=" + filepath.Dir(appRoot),
		"APP_ROOT=" + appRoot,
		"PORT=" + strconv.Itoa(app.port),
		"CF_INSTANCE_INDEX=" + strconv.Itoa(index),
	}
	cmd.Stdout, cmd.Stderr = app.stdout, app.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	waited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		app.exited <- err
		close(waited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		if t.Failed() {
			t.Logf("app stdout:\n%s\napp stderr:\n%s", app.stdout.String(), app.stderr.String())
		}
	})
	return app
}

// waitForBody polls GET path until it answers 200 with a body containing want, failing
// if the app exits or the deadline passes; it returns the body.
func waitForBody(t *testing.T, app *runningApp, path, want string) string {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", app.port, path)
	deadline := time.Now().Add(serveTimeout)
	var last string
	for time.Now().Before(deadline) {
		select {
		case err := <-app.exited:
			app.exited <- err // keep it for the cleanup
			t.Fatalf("app exited before answering %s: %v", path, err)
		default:
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
		} else {
			body, readErr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
			if readErr == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return string(body)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("GET %s did not answer 200 containing %q within %s; last: %s", url, want, serveTimeout, last)
	return ""
}

// freePort returns a TCP port the OS had free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
