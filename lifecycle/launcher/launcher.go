// Package launcher is the running half of drover's lifecycle: it turns an extracted
// droplet (HOME/app, HOME/deps, HOME/profile.d) and a start command into the shell
// invocation that sources the profile scripts and then execs the command, replacing
// itself so that signals reach the app. The functions here are pure; cmd/launcher execs.
package launcher

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Shell runs the launch script.
const Shell = "/bin/sh"

// script sources ../profile.d/*.sh (the buildpacks'), .profile.d/*.sh (the app's) and
// .profile, then runs the start command ($1): exec'd directly when it is one simple
// command, else through `sh -c`, which execs its last command in dash and busybox ash.
const script = `for f in ../profile.d/*.sh .profile.d/*.sh; do
	if [ -f "$f" ]; then . "./$f"; fi
done
unset f
if [ -f .profile ]; then . ./.profile; fi
`

// Plan is the process the launcher execs.
type Plan struct {
	Dir  string   // the app directory, its working directory
	Argv []string // the shell and its arguments
	Env  []string
}

// Command builds the launch for appDir and startCommand on top of env: HOME defaults to
// appDir's parent (/home/vcap), DEPS_DIR is HOME-side deps.
func Command(appDir, startCommand string, env []string) (Plan, error) {
	if appDir == "" || !filepath.IsAbs(appDir) {
		return Plan{}, fmt.Errorf("app directory %q: must be an absolute path", appDir)
	}
	if strings.TrimSpace(startCommand) == "" {
		return Plan{}, fmt.Errorf("start command: required")
	}
	appDir = filepath.Clean(appDir)
	root := filepath.Dir(appDir)
	env = setDefault(env, "HOME", root)
	env = setEnv(env, "DEPS_DIR", filepath.Join(root, "deps"))
	return Plan{
		Dir:  appDir,
		Argv: []string{Shell, "-c", script + ExecLine(startCommand), "launcher", startCommand},
		Env:  env,
	}, nil
}

// ExecLine is the script's last line running $1: `eval "exec $1"` for one simple command
// (so the app replaces the shell), `exec /bin/sh -c "$1"` for anything with shell
// control operators or leading variable assignments.
func ExecLine(startCommand string) string {
	if isSimple(startCommand) {
		return `eval "exec $1"`
	}
	return `exec ` + Shell + ` -c "$1"`
}

func isSimple(cmd string) bool {
	if strings.ContainsAny(unquoted(cmd), ";&|\n()`{}<>") {
		return false
	}
	first := strings.Fields(cmd)
	if len(first) == 0 || strings.Contains(first[0], "=") {
		return false
	}
	switch first[0] {
	case "cd", "export", "set", "if", "for", "while", "case", "exec", "!", "unset", ".", "source":
		return false
	}
	return true
}

// unquoted returns cmd with its single- and double-quoted parts and backslash-escaped
// characters left out, so that only characters the shell treats as syntax remain.
func unquoted(cmd string) string {
	var b strings.Builder
	var quote rune
	escaped := false
	for _, r := range cmd {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// StartCommandFromStagingInfo reads the start command from a droplet's staging_info.json,
// for when the launcher is given none.
func StartCommandFromStagingInfo(b []byte) (string, error) {
	var info struct {
		StartCommand string `json:"start_command"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return "", fmt.Errorf("staging_info.json: %w", err)
	}
	if strings.TrimSpace(info.StartCommand) == "" {
		return "", fmt.Errorf("staging_info.json: no start_command")
	}
	return info.StartCommand, nil
}

func setDefault(env []string, key, value string) []string {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key && v != "" {
			return env
		}
	}
	return setEnv(env, key, value)
}

func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
