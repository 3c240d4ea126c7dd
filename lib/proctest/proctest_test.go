package proctest

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStartCapturesOutputAndExitCode(t *testing.T) {
	p := Start(t, "sh", "/bin/sh", "-c", "echo out; echo err >&2; exit 3")
	require.Equal(t, 3, p.WaitExit(t, 10*time.Second))
	<-p.Exited()
	require.Error(t, p.Err())
	require.Contains(t, p.Output(), "out\n")
	require.Contains(t, p.Output(), "err\n")
}

func TestSignal(t *testing.T) {
	p := Start(t, "sleeper", "/bin/sh", "-c", "trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done")
	require.Eventually(t, func() bool { return strings.Contains(p.Output(), "ready") }, 10*time.Second, 10*time.Millisecond)
	p.Signal(t, syscall.SIGTERM)
	require.Equal(t, 7, p.WaitExit(t, 10*time.Second))
}

func TestFreeAddressAndWriteJSON(t *testing.T) {
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, FreeAddress(t))
	path := WriteJSON(t, "c.json", map[string]int{"a": 1})
	require.FileExists(t, path)
}
