package buildpacks

import (
	"context"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"drover.dev/lifecycle/builder"
	"drover.dev/lifecycle/result"
)

// repo is the repository root, seen from this package's directory.
const repo = "../.."

var buildpacksDir = filepath.Join(repo, "buildpacks")

var defaultOrder = []string{"staticfile", "nodejs", "go", "binary"}

// requireTool stops t when the host lacks tool: a skip, or a failure when
// DROVER_REQUIRE_ALL is set (as lib/testenv does; this module uses only the standard
// library).
func requireTool(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err == nil || isExecutable("/usr/sbin/"+tool) {
		return
	}
	msg := "needs " + tool + " on the host PATH"
	if all, _ := strconv.ParseBool(os.Getenv("DROVER_REQUIRE_ALL")); all {
		t.Fatal(msg + " (DROVER_REQUIRE_ALL is set: nothing may be skipped)")
	}
	t.Skip(msg)
}

// copyApp copies examples/NAME into a temp dir and returns the copy's path.
func copyApp(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "app")
	src := filepath.Join(repo, "examples", name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// stage is one builder run and what it printed.
type stage struct {
	res    result.Result
	err    error
	out    string
	cfg    builder.Config
	output *syncBuffer
}

// stageApp stages app with order (a chain when skipDetect) using cache.
func stageApp(t *testing.T, app, cache string, order []string, skipDetect bool) stage {
	t.Helper()
	dir := t.TempDir()
	out := &syncBuffer{}
	cfg := builder.Config{
		AppDir: app, BuildpacksDir: buildpacksDir, Order: order, SkipDetect: skipDetect,
		CacheDir: cache, DepsDir: filepath.Join(dir, "deps"),
		DropletPath:     filepath.Join(dir, "droplet.tgz"),
		OutputCachePath: filepath.Join(dir, "output-cache.tgz"),
		ResultPath:      filepath.Join(dir, "result.json"),
		Env:             os.Environ(), Stdout: out, Stderr: out,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := builder.Build(ctx, cfg)
	return stage{res: res, err: err, out: out.String(), cfg: cfg, output: out}
}

func (s stage) mustSucceed(t *testing.T) {
	t.Helper()
	if s.err != nil {
		t.Fatalf("staging failed: %v\noutput:\n%s", s.err, s.out)
	}
}

func (s stage) wantOutput(t *testing.T, present bool, texts ...string) {
	t.Helper()
	for _, text := range texts {
		if strings.Contains(s.out, text) != present {
			t.Errorf("output has %q: %v, want %v\noutput:\n%s", text, !present, present, s.out)
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// makeWritable undoes the read-only modes the Go module cache uses, so that the temp dir
// can be removed.
func makeWritable(t *testing.T, dir string) {
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
