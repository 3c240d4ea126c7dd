package docs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"drover.dev/lib/testenv"
	"github.com/stretchr/testify/require"
)

// goTools are the Go tools `make deps` installs into bin/; the scratch copy gets the
// repository's, so that nothing is fetched from inside the network namespace.
var goTools = []string{"grpcurl", "buf", "staticcheck"}

// maxOutputBytes bounds what is kept of one command's output.
const maxOutputBytes = 4 << 20

// stack is the docs test's world: a scratch copy of the repository (its own .drover and
// bin) and a network namespace of its own, where every documented command runs with the
// scratch copy as working directory, so the dev stack's default ports are free and
// nothing clashes with another stack on this machine.
type stack struct {
	root  string   // the scratch copy
	netns string   // the network namespace's name
	env   []string // the environment of every command
}

// newStack copies the repository, creates the network namespace and registers the
// clean-up (make down, every process left in the namespace killed, the namespace
// removed), which runs also when the test fails.
func newStack(t *testing.T) *stack {
	t.Helper()
	testenv.RequireRoot(t, "a network namespace and the dev stack's containers")
	for _, tool := range []string{"ip", "nsenter", "git", "make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "install it (scripts/install-deps.sh)")
		}
	}
	src := repoRoot(t)
	tmp := t.TempDir()
	// Postgres runs as the postgres user: it must reach its directory under the copy.
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	dir := filepath.Join(tmp, "drover")
	require.NoError(t, copyRepo(src, dir))
	s := &stack{root: dir, netns: "drover-docs-" + randomHex(4)}
	s.env = stackEnv(dir, stackCache(src))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".tmp"), 0o755))

	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	for _, tool := range goTools {
		if err := copyFile(filepath.Join(src, "bin", tool), filepath.Join(bin, tool)); err != nil && !errors.Is(err, os.ErrNotExist) {
			require.NoError(t, err)
		}
	}
	// What `make deps` would fetch must be there before the namespace cuts the network.
	if out, err := s.host("scripts/install-deps.sh --check"); err != nil {
		t.Logf("install-deps --check: %s", out)
		out, err := s.host("scripts/install-deps.sh")
		require.NoError(t, err, "scripts/install-deps.sh: %s", out)
	}

	// Build every binary while the network is there, in case a module is not in the
	// cache yet: `make up` in the namespace then only finds them built.
	if out, err := s.host("make build"); err != nil {
		require.NoError(t, err, "make build: %s", out)
	}

	out, err := exec.Command("ip", "netns", "add", s.netns).CombinedOutput()
	require.NoError(t, err, "ip netns add: %s", out)
	t.Cleanup(func() { s.destroy(t) })
	out, err = exec.Command("ip", "-n", s.netns, "link", "set", "lo", "up").CombinedOutput()
	require.NoError(t, err, "loopback up: %s", out)
	return s
}

// stackCache is where scripts/stack.sh keeps the stacks it built for the repository at
// src ($DROVER_STACK_CACHE, else its .drover/cache/stacks): the scratch copy's `make up`
// finds the bookworm stack there, since its network namespace cannot reach Debian's
// mirror.
func stackCache(src string) string {
	if dir := os.Getenv("DROVER_STACK_CACHE"); dir != "" {
		return dir
	}
	return filepath.Join(src, ".drover", "cache", "stacks")
}

// stackEnv is the environment of the documented commands: the test's, without the
// variables that would point them at another stack, with the scratch copy's home and bin
// and the stack cache stacks.
func stackEnv(dir, stacks string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "DROVER_") && name != testenv.RequireAllEnv,
			name == "MAKEFLAGS", name == "MAKELEVEL", name == "MFLAGS":
			continue
		case name == "PATH":
			kv += ":/usr/local/go/bin"
		}
		env = append(env, kv)
	}
	return append(env,
		"TMPDIR="+filepath.Join(dir, ".tmp"), // mktemp in a walk-through stays in the copy
		"DROVER_HOME="+filepath.Join(dir, ".drover"),
		"DROVER_BIN="+filepath.Join(dir, "bin"),
		"DROVER_PG_PORT=54329", // the default: free in the namespace
		"DROVER_STACK_CACHE="+stacks,
	)
}

// host runs a shell command in the scratch copy outside the namespace.
func (s *stack) host(cmd string) (string, error) {
	c := exec.Command("bash", "-c", cmd)
	c.Dir, c.Env = s.root, s.env
	out, err := c.CombinedOutput()
	return string(out), err
}

// run runs a shell command in the namespace (network only: the host's mounts stay
// visible, as they are to a user's shell) from the scratch copy, with vars added to
// the environment, and returns its output (stdout and stderr as a terminal shows them)
// and exit status. The command and everything in its process group are killed when
// timeout passes.
func (s *stack) run(cmd string, vars []string, timeout time.Duration) (string, int, error) {
	outFile, err := os.CreateTemp("", "drover-docs-out-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(outFile.Name())
	defer outFile.Close()
	c := exec.Command("nsenter", "--net=/run/netns/"+s.netns, "--", "bash", "-c", cmd)
	c.Dir = s.root
	c.Env = append(append([]string{}, s.env...), vars...)
	// A file, not a pipe: daemons that `make up` starts may inherit it and outlive the
	// command.
	c.Stdout, c.Stderr = outFile, outFile
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return "", 0, err
	}
	timer := time.AfterFunc(timeout, func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })
	werr := c.Wait()
	timedOut := !timer.Stop()
	if _, err := outFile.Seek(0, io.SeekStart); err != nil {
		return "", 0, err
	}
	out, err := io.ReadAll(io.LimitReader(outFile, maxOutputBytes))
	if err != nil {
		return "", 0, err
	}
	if timedOut {
		return string(out), -1, fmt.Errorf("timed out after %s", timeout)
	}
	var exit *exec.ExitError
	if errors.As(werr, &exit) {
		return string(out), exit.ExitCode(), nil
	}
	return string(out), 0, werr
}

// destroy stops the stack (make down), kills what is left in the namespace and
// removes it.
func (s *stack) destroy(t *testing.T) {
	if out, code, err := s.run("make down", nil, 5*time.Minute); err != nil || code != 0 {
		t.Logf("clean-up: make down: exit %d, %v\n%s", code, err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		pids := s.pidsInNetns()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Logf("clean-up: killing process %d left in the namespace: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := exec.Command("ip", "netns", "delete", s.netns).CombinedOutput(); err != nil {
		t.Errorf("clean-up: ip netns delete %s: %v: %s", s.netns, err, out)
	}
}

// pidsInNetns lists the processes whose network namespace is the stack's.
func (s *stack) pidsInNetns() []int {
	var st syscall.Stat_t
	if err := syscall.Stat("/run/netns/"+s.netns, &st); err != nil {
		return nil
	}
	want := "net:[" + strconv.FormatUint(st.Ino, 10) + "]"
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && link == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// copyRepo copies the repository's files (tracked and untracked but not ignored, as
// the working tree has them) from src to dst.
func copyRepo(src, dst string) error {
	out, err := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil { // not a git checkout (e.g. an exported tree): every file but the stack's
		return copyTree(src, dst)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		err := copyFile(filepath.Join(src, name), filepath.Join(dst, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) { // deleted in the working tree
			return err
		}
	}
	return nil
}

// copyTree copies every file under src to dst but .git, bin and .drover at the top.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == ".git" || rel == "bin" || rel == ".drover" {
				return filepath.SkipDir
			}
			return nil
		}
		return copyFile(path, filepath.Join(dst, rel))
	})
}

// copyFile copies one file or symlink, keeping its mode.
func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, fi.Mode().Perm())
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// assignment matches a command that only sets a shell variable (`CURL="curl ..."`).
var assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|\$\([^()]*\)|[^\s"'|;&<>()]+)$`)

// evalAssignment evaluates an assignment command in the namespace and returns the
// variable as NAME=value, for the environment of the document's later commands.
func (s *stack) evalAssignment(cmd string, vars []string) (string, error) {
	m := assignment.FindStringSubmatch(cmd)
	out, code, err := s.run(cmd+"\nprintf '%s' \"$"+m[1]+"\"", vars, time.Minute)
	if err != nil || code != 0 {
		return "", fmt.Errorf("exit %d, %v: %s", code, err, out)
	}
	return m[1] + "=" + out, nil
}
