package launcher

import (
	"slices"
	"strings"
	"testing"
)

func TestCommandEnvAndArgv(t *testing.T) {
	p, err := Command("/home/vcap/app/", "node server.js", []string{"PATH=/bin", "DEPS_DIR=/wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Dir != "/home/vcap/app" {
		t.Errorf("dir %q", p.Dir)
	}
	for _, want := range []string{"PATH=/bin", "HOME=/home/vcap", "DEPS_DIR=/home/vcap/deps"} {
		if !slices.Contains(p.Env, want) {
			t.Errorf("env %v lacks %s", p.Env, want)
		}
	}
	if slices.Contains(p.Env, "DEPS_DIR=/wrong") {
		t.Errorf("env kept the old DEPS_DIR: %v", p.Env)
	}
	if p.Argv[0] != Shell || p.Argv[1] != "-c" || p.Argv[4] != "node server.js" || !strings.HasSuffix(p.Argv[2], `eval "exec $1"`) {
		t.Errorf("argv %q", p.Argv)
	}
}

func TestCommandKeepsHome(t *testing.T) {
	p, err := Command("/srv/app", "x", []string{"HOME=/root"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Env, "HOME=/root") || !slices.Contains(p.Env, "DEPS_DIR=/srv/deps") {
		t.Errorf("env %v", p.Env)
	}
}

func TestCommandRejects(t *testing.T) {
	if _, err := Command("app", "x", nil); err == nil || !strings.Contains(err.Error(), "must be an absolute path") {
		t.Errorf("relative app dir: %v", err)
	}
	if _, err := Command("/app", "  ", nil); err == nil || !strings.Contains(err.Error(), "start command: required") {
		t.Errorf("empty start command: %v", err)
	}
}

func TestExecLine(t *testing.T) {
	simple := []string{"node server.js", "nginx -p $HOME/app -g 'daemon off;'", "./bin/app", "sh boot.sh"}
	compound := []string{"a > log", "echo \"x\"; b", "cd x && ./run", "A=1 ./run", "a; b", "a | b", "a\nb", "export X=1"}
	for _, c := range simple {
		if got := ExecLine(c); got != `eval "exec $1"` {
			t.Errorf("ExecLine(%q) = %q", c, got)
		}
	}
	for _, c := range compound {
		if got := ExecLine(c); got != `exec /bin/sh -c "$1"` {
			t.Errorf("ExecLine(%q) = %q", c, got)
		}
	}
}

func TestStartCommandFromStagingInfo(t *testing.T) {
	got, err := StartCommandFromStagingInfo([]byte(`{"detected_buildpack":"go","start_command":"./bin/app"}`))
	if err != nil || got != "./bin/app" {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range []string{`{`, `{"start_command":""}`} {
		if _, err := StartCommandFromStagingInfo([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
