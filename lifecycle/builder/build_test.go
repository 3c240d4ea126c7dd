package builder

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"drover.dev/lifecycle/result"
)

// fixture is a staging run in a temp dir with fake buildpacks.
type fixture struct {
	t      *testing.T
	dir    string
	cfg    Config
	stdout *syncBuffer
	stderr *syncBuffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	f.cfg = Config{
		AppDir:          filepath.Join(dir, "app"),
		BuildpacksDir:   filepath.Join(dir, "buildpacks"),
		CacheDir:        filepath.Join(dir, "cache"),
		DepsDir:         filepath.Join(dir, "deps"),
		DropletPath:     filepath.Join(dir, "out", "droplet.tgz"),
		OutputCachePath: filepath.Join(dir, "out", "output-cache.tgz"),
		ResultPath:      filepath.Join(dir, "out", "result.json"),
		Env:             append(os.Environ(), "LOG="+filepath.Join(dir, "log")),
		Stdout:          f.stdout,
		Stderr:          f.stderr,
	}
	f.write("app/index.txt", "hello", 0o644)
	return f
}

func (f *fixture) write(rel, content string, mode os.FileMode) {
	f.t.Helper()
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		f.t.Fatal(err)
	}
}

// script writes buildpack NAME's bin/STEP; every script appends "NAME STEP ARGS" to $LOG.
func (f *fixture) script(name string, step Step, body string) {
	f.write(filepath.Join("buildpacks", name, "bin", string(step)),
		"#!/bin/sh\necho \""+name+" "+string(step)+" $*\" >>\"$LOG\"\n"+body+"\n", 0o755)
}

// simple adds a buildpack that detects when the app has file detectFile, compiles, and
// releases web: CMD.
func (f *fixture) simple(name, detectFile, web string) {
	f.script(name, StepDetect, `[ -f "$1/`+detectFile+`" ] && echo `+name+`-v1`)
	f.script(name, StepCompile, `echo compiled >"$1/compiled-by-`+name+`"`)
	f.script(name, StepRelease, "echo '---'; echo 'default_process_types:'; echo '  web: "+web+"'")
}

func (f *fixture) build() (result.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return Build(ctx, f.cfg)
}

func (f *fixture) log() string {
	b, _ := os.ReadFile(filepath.Join(f.dir, "log"))
	return string(b)
}

func wantCode(t *testing.T, err error, code int, msg string) {
	t.Helper()
	var be *Error
	if !errors.As(err, &be) || be.Code != code || !strings.Contains(be.Msg, msg) {
		t.Fatalf("error %v, want exit %d with %q", err, code, msg)
	}
}

func TestDetectOrderFirstWins(t *testing.T) {
	f := newFixture(t)
	f.simple("a", "nope", "a-web")
	f.simple("b", "index.txt", "b-web")
	f.simple("c", "index.txt", "c-web")
	f.cfg.Order = []string{"a", "b", "c"}
	res, err := f.build()
	if err != nil {
		t.Fatal(err, f.stderr)
	}
	if res.Buildpack != "b" || res.DetectOutput != "b-v1" || res.StartCommand != "b-web" || len(res.Buildpacks) != 1 {
		t.Fatalf("result %+v", res)
	}
	log := f.log()
	if strings.Contains(log, "c detect") || !strings.Contains(log, "a detect") || !strings.Contains(log, "b compile") {
		t.Fatalf("runs:\n%s", log)
	}
	if !strings.Contains(f.stdout.String(), "-----> Detected buildpack: b") {
		t.Fatalf("stdout: %s", f.stdout)
	}
}

func TestNoneDetected(t *testing.T) {
	f := newFixture(t)
	for _, n := range []string{"staticfile", "nodejs", "go", "binary"} {
		f.simple(n, "nope", "x")
	}
	f.cfg.Order = []string{"staticfile", "nodejs", "go", "binary"}
	_, err := f.build()
	wantCode(t, err, ExitNoneDetected, "none of the buildpacks detected the app: staticfile, nodejs, go, binary")
	if _, err := os.Stat(f.cfg.DropletPath); err == nil {
		t.Fatal("a droplet was written")
	}
}

func TestMissingBuildpack(t *testing.T) {
	f := newFixture(t)
	f.cfg.Order = []string{"nope", "gone"}
	_, err := f.build()
	wantCode(t, err, ExitBuildFailed, "buildpack nope: not found")
	wantCode(t, err, ExitBuildFailed, "buildpack gone: not found")
}

func TestSupplyChainSkipDetect(t *testing.T) {
	f := newFixture(t)
	f.script("a", StepSupply, `mkdir -p "$3/$4/profile.d"; echo 'export A=1' >"$3/$4/profile.d/a.sh"; echo a-dep >"$3/$4/dep"`)
	f.script("b", StepSupply, `[ -f "$3/0/dep" ] || exit 9`)
	f.script("b", StepFinalize, `echo finalized >"$1/finalized"`)
	f.script("b", StepCompile, `exit 1`)
	f.script("b", StepRelease, `echo 'default_process_types: {web: run-b}'`)
	f.cfg.Order, f.cfg.SkipDetect = []string{"a", "b"}, true
	res, err := f.build()
	if err != nil {
		t.Fatal(err, f.stderr)
	}
	if res.Buildpack != "b" || strings.Join(res.Buildpacks, ",") != "a,b" || res.DetectOutput != "" {
		t.Fatalf("result %+v", res)
	}
	cache, deps := f.cfg.CacheDir, f.cfg.DepsDir
	want := "a supply " + f.cfg.AppDir + " " + cache + "/a " + deps + " 0\n" +
		"b supply " + f.cfg.AppDir + " " + cache + "/b " + deps + " 1\n" +
		"b finalize " + f.cfg.AppDir + " " + cache + "/b " + deps + " 1\n" +
		"b release " + f.cfg.AppDir + "\n"
	if f.log() != want {
		t.Fatalf("runs:\n%s\nwant:\n%s", f.log(), want)
	}
	for _, s := range []string{"-----> Running a supply", "-----> Running b supply", "-----> Running b finalize"} {
		if !strings.Contains(f.stdout.String(), s) {
			t.Errorf("stdout lacks %q: %s", s, f.stdout)
		}
	}
	files := readTarGz(t, f.cfg.DropletPath)
	if files["./profile.d/0_a.sh"].body != "export A=1\n" || files["./deps/0/dep"].body != "a-dep\n" || files["./app/finalized"].body != "finalized\n" {
		t.Fatalf("droplet: %v", memberNames(files))
	}
}

func TestChainNeedsSupply(t *testing.T) {
	f := newFixture(t)
	f.simple("a", "index.txt", "x")
	f.simple("b", "index.txt", "y")
	f.cfg.Order, f.cfg.SkipDetect = []string{"a", "b"}, true
	_, err := f.build()
	wantCode(t, err, ExitBuildFailed, "buildpack a has no bin/supply")
	if f.log() != "" {
		t.Fatalf("scripts ran: %s", f.log())
	}
}

// lineWatcher is an io.Writer that closes seen when the output so far contains want.
type lineWatcher struct {
	syncBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(w.syncBuffer.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func TestCompileFailureStreamsOutput(t *testing.T) {
	f := newFixture(t)
	gate := filepath.Join(f.dir, "gate")
	f.script("x", StepDetect, "exit 0")
	// The compile prints a line, then waits for the test to see it: only streamed output
	// lets it go on. Then it fails.
	f.script("x", StepCompile, `echo "compiling step 1"
i=0; while [ ! -f "`+gate+`" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
echo "boom: syntax error" >&2; exit 7`)
	w := &lineWatcher{want: "compiling step 1", seen: make(chan struct{})}
	f.cfg.Stdout = w
	f.cfg.Order = []string{"x"}
	done := make(chan error, 1)
	go func() { _, err := f.build(); done <- err }()
	select {
	case <-w.seen:
		f.write("gate", "", 0o644)
	case err := <-done:
		t.Fatalf("build ended before its output was seen: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("compile output not streamed within 20s")
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("build did not end")
	}
	wantCode(t, err, ExitBuildFailed, "buildpack x: bin/compile exited with status 7")
	if !strings.Contains(f.stderr.String(), "boom: syntax error") {
		t.Fatalf("stderr: %s", f.stderr)
	}
}

func TestReleaseFailures(t *testing.T) {
	cases := map[string]struct {
		release, procfile string
		want              string
	}{
		"exit status":  {"echo partial; exit 3", "", "buildpack x: bin/release exited with status 3"},
		"bad yaml":     {"echo 'default_process_types: ['", "", "buildpack x: bin/release: release YAML:"},
		"no web":       {"echo 'default_process_types: {worker: w}'", "", "no start command: buildpack x's bin/release gave no default web process type"},
		"bad procfile": {"echo 'default_process_types: {web: w}'", "web\n", "Procfile: line 1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.script("x", StepDetect, "exit 0")
			f.script("x", StepCompile, "true")
			f.script("x", StepRelease, c.release)
			if c.procfile != "" {
				f.write("app/Procfile", c.procfile, 0o644)
			}
			f.cfg.Order = []string{"x"}
			_, err := f.build()
			wantCode(t, err, ExitReleaseFail, c.want)
		})
	}
}

func TestProcfileWinsAndDroplet(t *testing.T) {
	f := newFixture(t)
	f.simple("x", "index.txt", "from-release")
	f.write("app/Procfile", "web: ./run.sh --fast\nworker: ./work\n", 0o644)
	f.write("app/run.sh", "#!/bin/sh\n", 0o755)
	if err := os.Symlink("run.sh", filepath.Join(f.cfg.AppDir, "link")); err != nil {
		t.Fatal(err)
	}
	f.cfg.Order = []string{"x"}
	res, err := f.build()
	if err != nil {
		t.Fatal(err, f.stderr)
	}
	if res.StartCommand != "./run.sh --fast" || res.ProcessTypes["worker"] != "./work" {
		t.Fatalf("result %+v", res)
	}
	b, err := os.ReadFile(f.cfg.DropletPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if res.DropletSHA256 != hex.EncodeToString(sum[:]) || res.DropletSize != int64(len(b)) {
		t.Fatalf("result sha %s size %d, file sha %x size %d", res.DropletSHA256, res.DropletSize, sum, len(b))
	}
	files := readTarGz(t, f.cfg.DropletPath)
	for _, n := range []string{"./app/", "./deps/", "./profile.d/", "./app/index.txt", "./app/compiled-by-x", "./staging_info.json"} {
		if _, ok := files[n]; !ok {
			t.Errorf("droplet lacks %s: %v", n, memberNames(files))
		}
	}
	for n := range files {
		if !SafeMemberName(n) || !strings.HasPrefix(n, "./") {
			t.Errorf("unsafe member %q", n)
		}
	}
	if files["./app/run.sh"].mode&0o111 == 0 {
		t.Errorf("run.sh lost its execute bits: %o", files["./app/run.sh"].mode)
	}
	if l := files["./app/link"]; l.typ != tar.TypeSymlink || l.link != "run.sh" {
		t.Errorf("symlink: %+v", l)
	}
	var info StagingInfo
	if err := json.Unmarshal([]byte(files["./staging_info.json"].body), &info); err != nil || info.DetectedBuildpack != "x" || info.StartCommand != "./run.sh --fast" {
		t.Fatalf("staging_info %+v %v", info, err)
	}
	rb, err := os.ReadFile(f.cfg.ResultPath)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := result.Parse(rb)
	if err != nil || parsed.DropletSHA256 != res.DropletSHA256 {
		t.Fatalf("result.json %s: %v", rb, err)
	}
}

func TestOutputCache(t *testing.T) {
	f := newFixture(t)
	f.script("x", StepDetect, "exit 0")
	f.script("x", StepCompile, `echo saved >"$2/thing"`)
	f.script("x", StepRelease, "echo 'default_process_types: {web: w}'")
	f.write("cache/x/old", "kept", 0o644)
	f.cfg.Order = []string{"x"}
	if _, err := f.build(); err != nil {
		t.Fatal(err, f.stderr)
	}
	files := readTarGz(t, f.cfg.OutputCachePath)
	if files["./x/thing"].body != "saved\n" || files["./x/old"].body != "kept" {
		t.Fatalf("output cache: %v", memberNames(files))
	}
}

func TestNonExecutableScriptsRunThroughInterpreter(t *testing.T) {
	f := newFixture(t)
	f.simple("x", "index.txt", "w")
	for _, s := range []Step{StepDetect, StepCompile, StepRelease} {
		if err := os.Chmod(filepath.Join(f.cfg.BuildpacksDir, "x", "bin", string(s)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.cfg.Order = []string{"x"}
	if res, err := f.build(); err != nil || res.StartCommand != "w" {
		t.Fatalf("%+v %v %s", res, err, f.stderr)
	}
}

func TestWriteFailure(t *testing.T) {
	f := newFixture(t)
	f.simple("x", "index.txt", "w")
	f.write("blocker", "", 0o644)
	f.cfg.DropletPath = filepath.Join(f.dir, "blocker", "droplet.tgz")
	f.cfg.Order = []string{"x"}
	_, err := f.build()
	wantCode(t, err, ExitWriteFailed, "writing the droplet")
}

func TestMissingAppDir(t *testing.T) {
	f := newFixture(t)
	f.cfg.AppDir = filepath.Join(f.dir, "none")
	f.cfg.Order = []string{"x"}
	_, err := f.build()
	wantCode(t, err, ExitSetup, "app directory")
}

type member struct {
	typ  byte
	mode int64
	link string
	body string
}

func readTarGz(t *testing.T, path string) map[string]member {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]member{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = member{typ: h.Typeflag, mode: h.Mode, link: h.Linkname, body: string(b)}
	}
}

func memberNames(m map[string]member) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a child's output copiers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
