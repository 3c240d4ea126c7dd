package containerd

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"drover.dev/executor"
	"github.com/stretchr/testify/require"
)

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitExit(t *testing.T, p executor.InteractiveProcess) executor.ProcessExit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exit, err := p.Wait(ctx)
	require.NoError(t, err)
	return exit
}

func TestExecInteractiveTTYResizeAndExitStatus(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	spec.Env = []string{"A=1"}
	create(t, r, spec)

	stdinR, stdinW := io.Pipe()
	t.Cleanup(func() { stdinW.Close() })
	var out syncBuffer
	p, err := r.ExecInteractive(context.Background(), spec.Guid, executor.InteractiveSpec{
		Args: []string{"/bin/sh"}, TTY: true, Size: executor.TerminalSize{Rows: 24, Columns: 80},
		Env: []string{"B=2"}, User: "vcap", Stdin: stdinR, Stdout: &out,
	})
	require.NoError(t, err)
	_, err = io.WriteString(stdinW, "echo \"x$A$B$USER\"; stty size\n")
	require.NoError(t, err)
	waitFor(t, "the first size", func() bool { return strings.Contains(out.String(), "24 80") })
	require.Contains(t, out.String(), "x12vcap")

	require.NoError(t, p.Resize(context.Background(), executor.TerminalSize{Rows: 40, Columns: 100}))
	_, err = io.WriteString(stdinW, "stty size\n")
	require.NoError(t, err)
	waitFor(t, "the new size", func() bool { return strings.Contains(out.String(), "40 100") })

	_, err = io.WriteString(stdinW, "exit 5\n")
	require.NoError(t, err)
	require.Equal(t, 5, waitExit(t, p).Code)
}

func TestExecInteractiveStreamsAndStdinEOF(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	create(t, r, spec)

	var out, errOut syncBuffer
	p, err := r.ExecInteractive(context.Background(), spec.Guid, executor.InteractiveSpec{
		Args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Stdout: &out, Stderr: &errOut,
	})
	require.NoError(t, err)
	require.Equal(t, 3, waitExit(t, p).Code)
	require.Equal(t, "out\n", out.String())
	require.Equal(t, "err\n", errOut.String())

	var catOut syncBuffer
	p, err = r.ExecInteractive(context.Background(), spec.Guid, executor.InteractiveSpec{
		Args: []string{"cat"}, Stdin: strings.NewReader("hello\n"), Stdout: &catOut,
	})
	require.NoError(t, err)
	require.Equal(t, 0, waitExit(t, p).Code, "cat ends when its input does")
	require.Equal(t, "hello\n", catOut.String())

	// What the command leaves running in its session ends with it.
	_, task, err := r.loadTask(r.nsCtx(context.Background()), spec.Guid)
	require.NoError(t, err)
	var bgOut syncBuffer
	p, err = r.ExecInteractive(context.Background(), spec.Guid, executor.InteractiveSpec{
		Args: []string{"sh", "-c", "sleep 1003 & echo bg"}, Stdout: &bgOut,
	})
	require.NoError(t, err)
	require.Equal(t, 0, waitExit(t, p).Code)
	require.Equal(t, "bg\n", bgOut.String())
	waitFor(t, "no process left", func() bool {
		pids, err := appPids(r.nsCtx(context.Background()), task)
		return err == nil && len(pids) == 0
	})

	_, err = r.ExecInteractive(context.Background(), spec.Guid, executor.InteractiveSpec{Args: []string{"true"}, User: "no-such-user"})
	require.ErrorContains(t, err, "no-such-user")
	_, err = r.ExecInteractive(context.Background(), spec.Guid, executor.InteractiveSpec{})
	require.ErrorContains(t, err, "args")
	_, err = r.ExecInteractive(context.Background(), "no-such-container", executor.InteractiveSpec{Args: []string{"true"}})
	require.ErrorIs(t, err, executor.ErrContainerNotFound)
}

// TestExecInteractiveKilledWithItsChildrenWhenContextEnds: a client that goes away
// leaves no process in the container, not even the ones its shell started.
func TestExecInteractiveKilledWithItsChildrenWhenContextEnds(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipes", true: "tty"}[tty], func(t *testing.T) {
			cfg := testConfig(t)
			r := newTestRuntime(t, cfg)
			spec := busyboxSpec(t)
			create(t, r, spec)
			_, task, err := r.loadTask(r.nsCtx(context.Background()), spec.Guid)
			require.NoError(t, err)
			appCount := func() int {
				pids, err := appPids(r.nsCtx(context.Background()), task)
				require.NoError(t, err)
				return len(pids)
			}
			// The init's own sleep may still be starting (a fork not yet exec'd).
			waitFor(t, "a quiet container", func() bool { return appCount() == 0 })

			stdinR, stdinW := io.Pipe()
			t.Cleanup(func() { stdinW.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out syncBuffer
			p, err := r.ExecInteractive(ctx, spec.Guid, executor.InteractiveSpec{
				Args: []string{"sh", "-c", "sleep 1001 & (sleep 1002 &) ; echo started; cat"}, TTY: tty,
				Stdin: stdinR, Stdout: &out, Stderr: &out,
			})
			require.NoError(t, err)
			waitFor(t, "the children", func() bool { return strings.Contains(out.String(), "started") && appCount() >= 3 })

			cancel()
			exit := waitExit(t, p)
			require.NotEqual(t, 0, exit.Code)
			waitFor(t, "no process left", func() bool { return appCount() == 0 })
			require.NoError(t, p.Kill(context.Background()), "a second kill is a no-op")
		})
	}
}

func TestFamilyOf(t *testing.T) {
	stats := map[uint32]procStat{
		10: {PPid: 1, Session: 10},  // the exec'd process, a session leader
		11: {PPid: 10, Session: 10}, // its child
		12: {PPid: 11, Session: 12}, // a grandchild in a session of its own
		13: {PPid: 1, Session: 10},  // an orphan still in its session
		20: {PPid: 1, Session: 20},  // someone else
		21: {PPid: 20, Session: 20}, // someone else's child
		22: {PPid: 12, Session: 12}, // below the grandchild
		30: {PPid: 99, Session: 99}, // unrelated
	}
	stat := func(pid uint32) (procStat, bool) { s, ok := stats[pid]; return s, ok }
	got := familyOf(10, []uint32{10, 11, 12, 13, 20, 21, 22, 30, 40}, stat)
	slices.Sort(got)
	require.Equal(t, []uint32{10, 11, 12, 13, 22}, got)
	require.Empty(t, familyOf(10, []uint32{20, 21}, stat), "a gone root has no family")
}
