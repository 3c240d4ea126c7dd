package handover

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// childEnv makes the test binary act as a child that serves on the address it names.
const childEnv = "HANDOVER_TEST_CHILD_ADDRESS"

// TestMain runs the child: it listens on $HANDOVER_TEST_CHILD_ADDRESS with Listen,
// prints "listening", answers one connection with "served by the child" and exits.
func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		lis, err := Listen(addr)
		if err != nil {
			os.Stdout.WriteString("listen: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("listening\n")
		conn, err := lis.Accept()
		if err != nil {
			os.Exit(1)
		}
		_, _ = conn.Write([]byte("served by the child\n"))
		_ = conn.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestPassedListenerServesInTheChildAndIsReleasedWithIt(t *testing.T) {
	r, err := Reserve()
	require.NoError(t, err)
	addr := r.Address()
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, addr)

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+addr)
	release, err := Pass(cmd, r)
	require.NoError(t, err)
	require.Contains(t, cmd.Env, Env+"="+addr+"=3")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	release()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "listening\n", line, "the child took the passed socket (binding again would have failed)")
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	got, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "served by the child\n", got)
	conn.Close()
	require.NoError(t, cmd.Wait())

	_, err = net.DialTimeout("tcp", addr, 5*time.Second)
	require.Error(t, err, "nothing holds the port once the child has exited")
}

func TestPassReplacesAnInheritedVariable(t *testing.T) {
	r, err := Reserve()
	require.NoError(t, err)
	cmd := exec.Command("true")
	cmd.Env = []string{"A=1", Env + "=127.0.0.1:1=3"}
	cmd.ExtraFiles = []*os.File{os.Stdin}
	release, err := Pass(cmd, r)
	require.NoError(t, err)
	defer release()
	require.Equal(t, []string{"A=1", Env + "=" + r.Address() + "=4"}, cmd.Env, "descriptors follow the extra files already there")
}

func TestListenWithoutAnInheritedSocketBinds(t *testing.T) {
	tab, err := parse("")
	require.NoError(t, err)
	lis, err := tab.listen("127.0.0.1:0")
	require.NoError(t, err)
	lis.Close()
}

func TestListenRefusesADescriptorOfAnotherAddress(t *testing.T) {
	r, err := Reserve()
	require.NoError(t, err)
	defer r.Close()
	f, err := r.lis.File() // a descriptor of its own, which listen takes and closes
	require.NoError(t, err)
	fd, err := syscall.Dup(int(f.Fd()))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tab := &table{fds: map[string]int{"127.0.0.1:1": fd}}
	_, err = tab.listen("127.0.0.1:1")
	require.ErrorContains(t, err, "listens on "+r.Address()+", not 127.0.0.1:1")
}

func TestParseRefusesBadValues(t *testing.T) {
	for value, want := range map[string]string{
		"127.0.0.1:1":                 `"127.0.0.1:1" is not ADDRESS=FD`,
		"=3":                          `"=3" is not ADDRESS=FD`,
		"127.0.0.1:1=x":               "the descriptor must be a number of 3 or more",
		"127.0.0.1:1=2":               "the descriptor must be a number of 3 or more",
		"127.0.0.1:1=3 127.0.0.1:1=4": "127.0.0.1:1 is named twice",
	} {
		_, err := parse(value)
		require.ErrorContains(t, err, want, value)
		require.True(t, strings.HasPrefix(err.Error(), Env+": "), value)
	}
}
