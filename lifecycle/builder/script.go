package builder

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// ScriptCommand is the argv that runs script with args: the script itself when it is
// executable, else its #! interpreter (or /bin/sh when it has none), because an archive
// may have lost the execute bits.
func ScriptCommand(script string, args ...string) ([]string, error) {
	st, err := os.Stat(script)
	if err != nil {
		return nil, err
	}
	if st.Mode()&0o111 != 0 {
		return append([]string{script}, args...), nil
	}
	f, err := os.Open(script)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 512)).ReadString('\n')
	return append(Interpreter(line), append([]string{script}, args...)...), nil
}

// Interpreter reads a script's first line: `#!/path [arg]` gives [/path arg]; anything
// else gives [/bin/sh].
func Interpreter(firstLine string) []string {
	if !strings.HasPrefix(firstLine, "#!") {
		return []string{"/bin/sh"}
	}
	fields := strings.SplitN(strings.TrimSpace(firstLine[2:]), " ", 2)
	if fields[0] == "" {
		return []string{"/bin/sh"}
	}
	argv := []string{fields[0]}
	if len(fields) == 2 && strings.TrimSpace(fields[1]) != "" {
		argv = append(argv, strings.TrimSpace(fields[1]))
	}
	return argv
}

// scriptPath is buildpack dir's bin/STEP.
func scriptPath(dir string, step Step) string { return filepath.Join(dir, "bin", string(step)) }

// runScript runs bp's bin/STEP with args in workDir, its stdout to stdout and stderr to
// stderr (passed straight through, so the output streams as it is written). It returns
// the exit status (-1 with an error when it could not start or was killed).
func runScript(ctx context.Context, bp Buildpack, step Step, workDir string, env []string, stdout, stderr io.Writer, args ...string) (int, error) {
	argv, err := ScriptCommand(scriptPath(bp.Dir, step), args...)
	if err != nil {
		return -1, fmt.Errorf("buildpack %s: bin/%s: %w", bp.Name, step, err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = workDir
	cmd.Env = env
	cmd.Stdin = nil
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// Its own process group, so that a cancelled build stops what the script started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1, fmt.Errorf("buildpack %s: bin/%s was killed by signal %v", bp.Name, step, ws.Signal())
		}
		return exit.ExitCode(), nil
	default:
		return -1, fmt.Errorf("buildpack %s: bin/%s: %w", bp.Name, step, err)
	}
}
