package buildpacks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"drover.dev/lifecycle/builder"
	"drover.dev/lifecycle/internal/gobuild"
)

func TestStaticfile(t *testing.T) {
	requireTool(t, "nginx")
	app := copyApp(t, "static-site")
	s := stageApp(t, app, t.TempDir(), defaultOrder, false)
	s.mustSucceed(t)
	s.wantOutput(t, true, "-----> Detected buildpack: staticfile", "-----> Running staticfile supply", "-----> Running staticfile finalize")
	if s.res.Buildpack != "staticfile" || s.res.StartCommand != "sh boot.sh" {
		t.Fatalf("result %+v", s.res)
	}
	for _, f := range []string{"public/index.html", "public/style.css", "nginx.conf", "boot.sh"} {
		if _, err := os.Stat(filepath.Join(app, f)); err != nil {
			t.Errorf("app lacks %s: %v", f, err)
		}
	}
	conf, _ := os.ReadFile(filepath.Join(app, "nginx.conf"))
	for _, want := range []string{"listen @PORT@;", "root @APP@/public;", "pid @RUN@/nginx.pid;", "client_body_temp_path @RUN@"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("nginx.conf lacks %q:\n%s", want, conf)
		}
	}
	// nginx's workers (nobody, when the test runs as root) must reach the site.
	for d := filepath.Dir(app); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		must(t, os.Chmod(d, 0o755))
	}
	body := launch(t, app, s.res.StartCommand)
	if !strings.Contains(body, "Hello from drover") {
		t.Fatalf("page: %s", body)
	}
}

func TestStaticfileRoot(t *testing.T) {
	requireTool(t, "nginx")
	app := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(app, "dist"), 0o755))
	must(t, os.WriteFile(filepath.Join(app, "Staticfile"), []byte("root: dist\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(app, "dist", "index.html"), []byte("hi"), 0o644))
	s := stageApp(t, app, t.TempDir(), []string{"staticfile"}, false)
	s.mustSucceed(t)
	conf, _ := os.ReadFile(filepath.Join(app, "nginx.conf"))
	if !strings.Contains(string(conf), "root @APP@/dist;") {
		t.Fatalf("nginx.conf:\n%s", conf)
	}
	must(t, os.WriteFile(filepath.Join(app, "Staticfile"), []byte("root: ../etc\n"), 0o644))
	s = stageApp(t, app, t.TempDir(), []string{"staticfile"}, false)
	if s.err == nil || !strings.Contains(s.out, "Staticfile root: ../etc must be a relative path inside the app") {
		t.Fatalf("escaping root: %v\n%s", s.err, s.out)
	}
}

// TestBinary stages examples/binary-app and runs it with the launcher (python3 serves
// its page on a loopback port).
func TestBinary(t *testing.T) {
	requireTool(t, "python3")
	app := copyApp(t, "binary-app")
	must(t, os.Chmod(filepath.Join(app, "serve.sh"), 0o644)) // as a zip would leave it
	s := stageApp(t, app, t.TempDir(), defaultOrder, false)
	s.mustSucceed(t)
	s.wantOutput(t, true, "-----> Detected buildpack: binary", "-----> Running binary compile")
	if s.res.Buildpack != "binary" || s.res.StartCommand != "./serve.sh" {
		t.Fatalf("result %+v", s.res)
	}
	if body := launch(t, app, s.res.StartCommand); !strings.Contains(body, "binary-app v1") {
		t.Fatalf("page: %s", body)
	}
}

// launch runs the staged app with the launcher on a free loopback port (stopped when the
// test ends) and returns its `/` page.
func launch(t *testing.T, app, start string) string {
	t.Helper()
	launcher := gobuild.Command(t, "../cmd/launcher", "launcher")
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, launcher, app, start)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	return getWithin(t, fmt.Sprintf("http://127.0.0.1:%d/", port), 20*time.Second)
}

func TestBusybox(t *testing.T) {
	cases := []struct {
		file, content, web string
	}{
		{"start.sh", "echo hi\n", "sh start.sh"},
		{"index.html", "<p>hi</p>", "httpd -f -p $PORT -h ."},
	}
	for _, c := range cases {
		app := t.TempDir()
		must(t, os.WriteFile(filepath.Join(app, c.file), []byte(c.content), 0o644))
		s := stageApp(t, app, t.TempDir(), []string{"busybox"}, false)
		s.mustSucceed(t)
		if s.res.StartCommand != c.web || s.res.Buildpack != "busybox" {
			t.Errorf("%s: result %+v", c.file, s.res)
		}
	}
	app := t.TempDir()
	must(t, os.WriteFile(filepath.Join(app, "start.sh"), []byte("  \n"), 0o644))
	s := stageApp(t, app, t.TempDir(), []string{"busybox"}, false)
	wantExit(t, s, builder.ExitBuildFailed, "buildpack busybox: bin/compile exited with status 1")
	s.wantOutput(t, true, "busybox: start.sh is empty")
}

func TestNoneDetected(t *testing.T) {
	app := t.TempDir()
	must(t, os.WriteFile(filepath.Join(app, "README.txt"), []byte("nothing"), 0o644))
	s := stageApp(t, app, t.TempDir(), defaultOrder, false)
	wantExit(t, s, builder.ExitNoneDetected, "none of the buildpacks detected the app: staticfile, nodejs, go, binary")
}

// TestNodejsColdThenWarm: the first staging runs npm ci against the npm registry, the
// second (one source file changed, same cache) restores node_modules from the cache.
func TestNodejsColdThenWarm(t *testing.T) {
	requireTool(t, "node")
	requireTool(t, "npm")
	cache := t.TempDir()
	app := copyApp(t, "node-express")
	s := stageApp(t, app, cache, defaultOrder, false)
	s.mustSucceed(t)
	s.wantOutput(t, true, "-----> Detected buildpack: nodejs", "Installing node modules (npm ci)", "added ")
	s.wantOutput(t, false, "Restoring node_modules from cache")
	if s.res.Buildpack != "nodejs" || s.res.StartCommand != "npm start" {
		t.Fatalf("result %+v", s.res)
	}
	profile, err := os.ReadFile(filepath.Join(s.cfg.DepsDir, "0", "profile.d", "nodejs.sh"))
	if err != nil || !strings.Contains(string(profile), "NODE_ENV=${NODE_ENV:-production}") {
		t.Fatalf("profile.d/nodejs.sh: %s %v", profile, err)
	}

	app2 := copyApp(t, "node-express")
	must(t, os.WriteFile(filepath.Join(app2, "server.js"), append(read(t, filepath.Join(app2, "server.js")), "// v2\n"...), 0o644))
	w := stageApp(t, app2, cache, defaultOrder, false)
	w.mustSucceed(t)
	w.wantOutput(t, true, "Restoring node_modules from cache")
	w.wantOutput(t, false, "npm ci", "added ")
	if _, err := os.Stat(filepath.Join(app2, "node_modules", "express", "package.json")); err != nil {
		t.Fatalf("restored node_modules lacks express: %v", err)
	}
	keys, _ := filepath.Glob(filepath.Join(cache, "nodejs", "node_modules-*"))
	if len(keys) != 1 {
		t.Fatalf("cache keys %v, want one", keys)
	}
}

func TestNodejsInvalidPackageJSON(t *testing.T) {
	requireTool(t, "node")
	app := t.TempDir()
	must(t, os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name": "x",`), 0o644))
	s := stageApp(t, app, t.TempDir(), defaultOrder, false)
	wantExit(t, s, builder.ExitBuildFailed, "buildpack nodejs: bin/supply exited with status 1")
	s.wantOutput(t, true, "nodejs: package.json is not valid JSON", "JSON")
}

func TestNodejsReleaseWithoutStartScript(t *testing.T) {
	requireTool(t, "node")
	app := t.TempDir()
	must(t, os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name": "x"}`), 0o644))
	s := stageApp(t, app, t.TempDir(), defaultOrder, false)
	s.mustSucceed(t)
	if s.res.StartCommand != "node server.js" {
		t.Fatalf("result %+v", s.res)
	}
}

// TestSupplyChain: nodejs supplies (node_modules, profile.d), binary is final and the
// Procfile gives web: as `-b nodejs -b binary` would.
func TestSupplyChain(t *testing.T) {
	requireTool(t, "node")
	requireTool(t, "npm")
	app := copyApp(t, "node-express")
	must(t, os.WriteFile(filepath.Join(app, "Procfile"), []byte("web: node server.js\n"), 0o644))
	s := stageApp(t, app, t.TempDir(), []string{"nodejs", "binary"}, true)
	s.mustSucceed(t)
	s.wantOutput(t, true, "-----> Running nodejs supply", "-----> Running binary compile")
	s.wantOutput(t, false, "Detected buildpack")
	if s.res.Buildpack != "binary" || strings.Join(s.res.Buildpacks, ",") != "nodejs,binary" || s.res.StartCommand != "node server.js" {
		t.Fatalf("result %+v", s.res)
	}
	s = stageApp(t, copyApp(t, "node-express"), t.TempDir(), []string{"go", "nodejs"}, true)
	wantExit(t, s, builder.ExitBuildFailed, "buildpack go has no bin/supply")
}

// TestGoColdThenWarm: the first staging downloads chi from the Go module proxy, the second
// (main.go changed, same cache) does not.
func TestGoColdThenWarm(t *testing.T) {
	requireTool(t, "go")
	cache := t.TempDir()
	makeWritable(t, cache)
	app := copyApp(t, "go-web")
	s := stageApp(t, app, cache, defaultOrder, false)
	s.mustSucceed(t)
	s.wantOutput(t, true, "-----> Detected buildpack: go", "go: downloading github.com/go-chi/chi/v5")
	if s.res.Buildpack != "go" || s.res.StartCommand != "./bin/app" {
		t.Fatalf("result %+v", s.res)
	}
	if st, err := os.Stat(filepath.Join(app, "bin", "app")); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("bin/app: %v", err)
	}
	app2 := copyApp(t, "go-web")
	must(t, os.WriteFile(filepath.Join(app2, "main.go"), append(read(t, filepath.Join(app2, "main.go")), "// v2\n"...), 0o644))
	w := stageApp(t, app2, cache, defaultOrder, false)
	w.mustSucceed(t)
	w.wantOutput(t, false, "go: downloading")
}

func wantExit(t *testing.T, s stage, code int, msg string) {
	t.Helper()
	be, ok := s.err.(*builder.Error)
	if !ok || be.Code != code || !strings.Contains(be.Msg, msg) {
		t.Fatalf("error %v, want exit %d with %q\noutput:\n%s", s.err, code, msg, s.out)
	}
}

func getWithin(t *testing.T, url string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 2 * time.Second}
	var lastErr error
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(b)
			}
			lastErr = fmt.Errorf("status %d", resp.StatusCode)
		} else {
			lastErr = err
		}
		time.Sleep(100 * time.Millisecond) // polling interval, bounded by the deadline
	}
	t.Fatalf("GET %s: no 200 within %v: %v", url, limit, lastErr)
	return ""
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
