package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"drover.dev/bbs/client"
	"drover.dev/devstack"
	"drover.dev/lib/testenv"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// resizeWait bounds one `devstack up` or `down` of the resize test (builds, image
// pushes, evacuations on a loaded machine).
const resizeWait = 8 * time.Minute

// TestMakeUpResizeAndDown (issue 17, build 2): the launcher behind `make up`, `make
// status` and `make down` keeps its word on a private stack (its own DROVER_HOME and
// DROVER_BIN in a temporary directory, run in a network namespace of its own so that
// the dev stack's fixed ports, bridges and subnets clash with no other stack here):
// resizing 2→3 cells keeps every instance and the BBS; a flag that cannot apply to the
// running stack is refused, naming it, with nothing changed; 3→1 evacuates the removed
// cells and keeps cell-1's instances; status lists Postgres, containerd and NATS; and
// down leaves no process of the stack.
func TestMakeUpResizeAndDown(t *testing.T) {
	ns := newDevNetns(t)
	root, err := devstack.FindRoot()
	require.NoError(t, err)
	tmp := t.TempDir()
	// Postgres runs as the postgres user: it must reach its directory.
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	home, bin := filepath.Join(tmp, "home"), filepath.Join(tmp, "bin")
	ns.env = append(ns.env, "DROVER_HOME="+home, "DROVER_BIN="+bin, "DROVER_ROOT="+root)
	// Built here, outside the namespace: `up` inside then finds every binary up to date.
	require.NoError(t, devstack.Build(ctxFor(t, resizeWait), root, bin, devstack.BBSBinary, devstack.DroverctlBinary,
		devstack.AuctioneerBinary, devstack.RepBinary, devstack.ConvergerBinary, devstack.RouteEmitterBinary,
		devstack.StandinRouterBinary, devstack.FileserverBinary))
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "devstack"), "./devstack/cmd/devstack")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build devstack: %s", out)
	ns.devstack = filepath.Join(bin, "devstack")
	t.Cleanup(func() { ns.tearDown(t, tmp) })

	ns.mustRun(t, "up", "-cells", "2")
	s := loadStack(t, home)
	require.Len(t, s.Reps, 2)
	bbsPid := s.BBS[0].Pid()
	require.NotZero(t, bbsPid)
	bbs := ns.dialBBS(t, s)

	const guid = "resize-survivor"
	lrp := httpdLRP(guid, 4)
	lrp.MemoryMb, lrp.DiskMb = 32, 32
	_, err = bbs.DesireLRP(callCtx(t), &bbsv1.DesireLRPRequest{DesiredLrp: lrp})
	require.NoError(t, err)
	before := waitAllRunning(t, bbs, guid, 4, nil)
	require.Len(t, countByCell(before), 2, "the instances spread over both cells:\n%s", describeActuals(before))
	pids := servicePids(s)

	// A flag that cannot apply is refused, naming it, and changes nothing.
	out2, code := ns.run(t, "up", "-cells", "3", "-replicas", "2")
	require.NotZero(t, code, out2)
	require.Contains(t, out2, "-replicas 2 (it runs with 1) cannot apply to a running stack: run `make down` first")
	require.Equal(t, pids, servicePids(loadStack(t, home)), "a refused up changes nothing")

	ns.mustRun(t, "up", "-cells", "3")
	s = loadStack(t, home)
	require.Len(t, s.Reps, 3)
	for name, pid := range pids {
		require.Equal(t, pid, servicePids(s)[name], "%s keeps running through the resize 2→3", name)
	}
	require.Equal(t, instances(before), instances(waitAllRunning(t, bbs, guid, 4, nil)), "2→3 keeps every instance")

	cell1 := keep(before, "cell-1")
	require.NotEmpty(t, cell1)
	removed := []*devstack.Rep{s.Reps[1], s.Reps[2]}
	ns.mustRun(t, "up", "-cells", "1")
	s = loadStack(t, home)
	require.Len(t, s.Reps, 1)
	require.Equal(t, bbsPid, s.BBS[0].Pid(), "the BBS keeps running through the resize 3→1")
	require.Equal(t, pids["rep-cell-1"], s.Reps[0].Pid(), "cell-1's rep keeps running")
	for _, r := range removed {
		require.False(t, r.Running(), "%s's rep is stopped", r.CellID())
	}
	after := waitAllRunning(t, bbs, guid, 4, func(as []*modelsv1.ActualLRP) bool {
		return countByCell(as)["cell-1"] == 4
	})
	for key, instance := range instances(cell1) {
		require.Equal(t, instance, instances(after)[key], "index %d keeps its instance on cell-1", key)
	}

	status, code := ns.run(t, "status")
	require.Zero(t, code, status)
	for _, name := range []string{"postgres", "containerd", "nats", "bbs-0", "rep-cell-1"} {
		require.Regexp(t, `(?m)^`+name+` +pid [1-9][0-9]* .*SERVING$`, status, "status lists %s", name)
	}
	require.NotContains(t, status, "rep-cell-2")

	_, err = bbs.RemoveDesiredLRP(callCtx(t), &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: guid})
	require.NoError(t, err)
	ns.mustRun(t, "down")
	require.Empty(t, ns.leftovers(tmp, 30*time.Second), "down leaves no process of the stack")
	_, err = os.Stat(filepath.Join(home, "stack.json"))
	require.True(t, os.IsNotExist(err), "down forgets the stack")
}

// devNetns is a network namespace with loopback up where the stack's commands run.
type devNetns struct {
	name     string
	env      []string
	devstack string
}

// newDevNetns creates the namespace; tearDown removes it.
func newDevNetns(t *testing.T) *devNetns {
	t.Helper()
	testenv.RequireRoot(t, "a network namespace and the dev stack's containers")
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "install iproute2 and util-linux")
		}
	}
	root, err := devstack.FindRoot()
	require.NoError(t, err)
	if out, err := exec.Command(filepath.Join(root, "scripts", "install-deps.sh"), "--check").CombinedOutput(); err != nil {
		testenv.Missing(t, "the dev stack's packages", "run scripts/install-deps.sh: "+string(out))
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	ns := &devNetns{name: "drover-resize-" + hex.EncodeToString(suffix)}
	out, err := exec.Command("ip", "netns", "add", ns.name).CombinedOutput()
	require.NoError(t, err, "ip netns add: %s", out)
	out, err = exec.Command("ip", "-n", ns.name, "link", "set", "lo", "up").CombinedOutput()
	if err != nil {
		_ = exec.Command("ip", "netns", "delete", ns.name).Run()
		require.NoError(t, err, "loopback up: %s", out)
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "DROVER_") && name != testenv.RequireAllEnv {
			continue // nothing points at another stack
		}
		if name == "PATH" {
			kv += ":/usr/local/go/bin"
		}
		ns.env = append(ns.env, kv)
	}
	return ns
}

// run runs the devstack launcher with args in the namespace and returns its output and
// exit status; it is killed after resizeWait.
func (ns *devNetns) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), resizeWait)
	defer cancel()
	// A file, not a pipe: the daemons `up` starts must not hold the test's output open.
	outFile, err := os.CreateTemp(t.TempDir(), "devstack-out-*")
	require.NoError(t, err)
	defer outFile.Close()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + ns.name, "--", ns.devstack}, args...)...)
	cmd.Env = ns.env
	cmd.Stdout, cmd.Stderr = outFile, outFile
	err = cmd.Run()
	data, readErr := os.ReadFile(outFile.Name())
	require.NoError(t, readErr)
	t.Logf("devstack %s:\n%s", strings.Join(args, " "), data)
	if ctx.Err() != nil {
		t.Fatalf("devstack %s: not done within %s", strings.Join(args, " "), resizeWait)
	}
	if exit, ok := err.(*exec.ExitError); ok {
		return string(data), exit.ExitCode()
	}
	require.NoError(t, err)
	return string(data), 0
}

// mustRun is run that requires success.
func (ns *devNetns) mustRun(t *testing.T, args ...string) {
	t.Helper()
	out, code := ns.run(t, args...)
	require.Zero(t, code, "devstack %s:\n%s", strings.Join(args, " "), out)
}

// dialBBS connects to the stack's first BBS inside the namespace.
func (ns *devNetns) dialBBS(t *testing.T, s *devstack.Stack) *client.Client {
	t.Helper()
	tlsConf, err := s.ClientTLS()
	require.NoError(t, err)
	c, err := client.New(s.BBS[0].GRPCAddress(), tlsConf, grpc.WithContextDialer(ns.dial))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// dial opens a TCP connection from inside the namespace: the socket is created on an
// OS thread switched into it, and keeps belonging to it once the thread switches back.
func (ns *devNetns) dial(ctx context.Context, address string) (net.Conn, error) {
	target, err := os.Open("/run/netns/" + ns.name)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	runtime.LockOSThread()
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer self.Close()
	if err := setns(target); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, "tcp", address)
	if err := setns(self); err != nil {
		// The thread stays in the namespace: left locked, it ends with this goroutine.
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("leave the namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return conn, dialErr
}

// setns moves the calling thread into the network namespace of f.
func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// leftovers waits at most wait for the processes of the namespace, and those whose
// command line or working directory is under dir, to be gone, and returns those left.
func (ns *devNetns) leftovers(dir string, wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for {
		left := ns.processes(dir)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// processes lists "pid cmdline" of every process in the namespace or under dir.
func (ns *devNetns) processes(dir string) []string {
	var want string
	var st syscall.Stat_t
	if syscall.Stat("/run/netns/"+ns.name, &st) == nil {
		want = "net:[" + strconv.FormatUint(st.Ino, 10) + "]"
	}
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		proc := filepath.Join("/proc", e.Name())
		cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a zombie
		}
		netns, _ := os.Readlink(filepath.Join(proc, "ns", "net"))
		cwd, _ := os.Readlink(filepath.Join(proc, "cwd"))
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if (want != "" && netns == want) || strings.Contains(args, dir) || strings.HasPrefix(cwd, dir) {
			out = append(out, fmt.Sprintf("%d %s", pid, args))
		}
	}
	return out
}

// tearDown stops the stack (devstack down), kills whatever is left in the namespace or
// under dir, and removes the namespace; it runs also when the test fails.
func (ns *devNetns) tearDown(t *testing.T, dir string) {
	if ns.devstack != "" {
		ctx, cancel := context.WithTimeout(context.Background(), resizeWait)
		cmd := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+ns.name, "--", ns.devstack, "down")
		cmd.Env = ns.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("clean-up: devstack down: %v\n%s", err, out)
		}
		cancel()
	}
	for range 50 {
		left := ns.processes(dir)
		if len(left) == 0 {
			break
		}
		for _, p := range left {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			t.Logf("clean-up: killing %s", p)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := exec.Command("ip", "netns", "delete", ns.name).CombinedOutput(); err != nil {
		t.Errorf("clean-up: ip netns delete %s: %v: %s", ns.name, err, out)
	}
}

// loadStack reads the stack's state file.
func loadStack(t *testing.T, home string) *devstack.Stack {
	t.Helper()
	s, err := devstack.Load(home)
	require.NoError(t, err)
	return s
}

// servicePids maps each process of the stack to its pid.
func servicePids(s *devstack.Stack) map[string]int {
	out := map[string]int{}
	for _, svc := range s.Services() {
		out[svc.Name] = svc.Pid()
	}
	return out
}

// waitAllRunning waits until guid has n instances, all RUNNING, and ok (when set)
// accepts them.
func waitAllRunning(t *testing.T, c *client.Client, guid string, n int, ok func([]*modelsv1.ActualLRP) bool) []*modelsv1.ActualLRP {
	t.Helper()
	var last []*modelsv1.ActualLRP
	deadline := time.Now().Add(resizeWait)
	for {
		last = listActualLRPs(t, c, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid})
		if len(last) == n && countState(last, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING) == n && (ok == nil || ok(last)) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %d RUNNING instances within %s:\n%s", guid, n, resizeWait, describeActuals(last))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// instances maps each index to "instance guid on cell".
func instances(as []*modelsv1.ActualLRP) map[int32]string {
	out := map[int32]string{}
	for _, a := range as {
		out[a.GetIndex()] = a.GetInstanceGuid() + " on " + a.GetCellId()
	}
	return out
}

// keep returns the instances on cellID.
func keep(as []*modelsv1.ActualLRP, cellID string) []*modelsv1.ActualLRP {
	var out []*modelsv1.ActualLRP
	for _, a := range as {
		if a.GetCellId() == cellID {
			out = append(out, a)
		}
	}
	return out
}
