package proctest

import (
	"net"
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

func TestReserveAddressGoesToTheNextStartOnly(t *testing.T) {
	addr := ReserveAddress(t)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, addr)
	p := Start(t, "sh", "/bin/sh", "-c", `echo "[$DROVER_LISTEN_FDS]"`)
	require.Equal(t, 0, p.WaitExit(t, 10*time.Second))
	require.Equal(t, "["+addr+"=3]\n", p.Output(), "the child is told which descriptor listens on addr")

	q := Start(t, "sh", "/bin/sh", "-c", `echo "[$DROVER_LISTEN_FDS]"`)
	require.Equal(t, 0, q.WaitExit(t, 10*time.Second))
	require.Equal(t, "[]\n", q.Output(), "a reservation goes to one Start")

	_, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.Error(t, err, "the port is free once the child it went to has exited")
}
