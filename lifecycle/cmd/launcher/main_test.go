package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"drover.dev/lifecycle/internal/gobuild"
)

// droplet lays out an extracted droplet under a temp HOME: profile.d from a buildpack,
// the app's .profile.d and .profile, and pid.sh writing what it sees to $OUT.
func droplet(t *testing.T) (home, out string) {
	t.Helper()
	home = t.TempDir()
	out = filepath.Join(home, "out")
	files := map[string]string{
		"profile.d/0_dep.sh":    "export FROM_DEPS=deps\n",
		"app/.profile.d/app.sh": "export FROM_APP=\"$FROM_DEPS-app\"\n",
		"app/.profile":          "export FROM_PROFILE=profile\n",
		"app/pid.sh":            `echo "$$|$FROM_DEPS|$FROM_APP|$FROM_PROFILE|$HOME|$DEPS_DIR|$(pwd)" >"$OUT"` + "\n",
		"staging_info.json":     `{"detected_buildpack":"x","start_command":"sh pid.sh"}`,
		"profile.d/not-sourced": "export NOPE=1\n",
	}
	for rel, body := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home, out
}

func run(t *testing.T, bin string, out string, args ...string) (pid int, fields []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "OUT=" + out}
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("launcher %q: %v\n%s", args, err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, strings.Split(strings.TrimSpace(string(got)), "|")
}

func TestLauncherSourcesProfilesAndExecs(t *testing.T) {
	bin := gobuild.Command(t, ".", "launcher")
	home, out := droplet(t)
	app := filepath.Join(home, "app")
	pid, f := run(t, bin, out, app, "sh pid.sh")
	want := []string{strconv.Itoa(pid), "deps", "deps-app", "profile", home, filepath.Join(home, "deps"), app}
	if strings.Join(f, "|") != strings.Join(want, "|") {
		t.Fatalf("app saw %q, want %q (the first field is the PID: the app must replace the launcher)", f, want)
	}
}

func TestLauncherReadsStagingInfo(t *testing.T) {
	bin := gobuild.Command(t, ".", "launcher")
	home, out := droplet(t)
	_, f := run(t, bin, out, filepath.Join(home, "app"))
	if len(f) != 7 || f[1] != "deps" {
		t.Fatalf("app saw %q", f)
	}
}

func TestLauncherCompoundCommand(t *testing.T) {
	bin := gobuild.Command(t, ".", "launcher")
	home, out := droplet(t)
	_, f := run(t, bin, out, filepath.Join(home, "app"), "FROM_PROFILE=override sh pid.sh && true")
	if len(f) != 7 || f[3] != "override" {
		t.Fatalf("app saw %q", f)
	}
}

func TestLauncherUsage(t *testing.T) {
	bin := gobuild.Command(t, ".", "launcher")
	for _, args := range [][]string{{}, {"relative/app", "x"}, {t.TempDir() + "/app"}} {
		cmd := exec.Command(bin, args...)
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), "launcher") {
			t.Errorf("launcher %q: %v %s", args, err, b)
		}
	}
}
