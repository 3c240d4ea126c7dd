package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"drover.dev/lifecycle/internal/gobuild"
)

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func runBuilder(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

func TestBuilderCommand(t *testing.T) {
	bin := gobuild.Command(t, ".", "builder")
	dir := t.TempDir()
	bps := filepath.Join(dir, "buildpacks")
	for _, n := range []string{"a", "b"} {
		writeScript(t, filepath.Join(bps, n, "bin", "detect"), `[ -f "$1/`+n+`" ]`)
		writeScript(t, filepath.Join(bps, n, "bin", "compile"), "echo compiling "+n)
		writeScript(t, filepath.Join(bps, n, "bin", "release"), "echo 'default_process_types: {web: run-"+n+"}'")
	}
	app := filepath.Join(dir, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-app", app, "-buildpacks", bps, "-order", "a,b", "-cache", filepath.Join(dir, "cache"),
		"-deps", filepath.Join(dir, "deps"), "-droplet", filepath.Join(dir, "droplet.tgz"),
		"-output-cache", filepath.Join(dir, "cache.tgz"), "-result", filepath.Join(dir, "result.json")}

	code, _, stderr := runBuilder(t, bin, args...)
	if code != 222 || !strings.Contains(stderr, "builder: none of the buildpacks detected the app: a, b") {
		t.Fatalf("nothing detected: exit %d, stderr %q", code, stderr)
	}

	if err := os.WriteFile(filepath.Join(app, "b"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBuilder(t, bin, args...)
	if code != 0 || !strings.Contains(stdout, "-----> Detected buildpack: b") || !strings.Contains(stdout, "compiling b") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err != nil || !strings.Contains(string(b), `"start_command":"run-b"`) {
		t.Fatalf("result %s %v", b, err)
	}

	code, _, stderr = runBuilder(t, bin, append(args, "-order", "a,,a/b")...)
	if code != 1 || !strings.Contains(stderr, "entry 2 is empty") || !strings.Contains(stderr, `"a/b" is not a buildpack name`) {
		t.Fatalf("bad -order: exit %d, stderr %q", code, stderr)
	}
}
