package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"drover.dev/executor"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"github.com/stretchr/testify/require"
)

func tarOf(t *testing.T, files map[string]string) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &buf
}

func TestHTTPServerReachableAtHostPortAndByCheck(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	ctx := context.Background()
	spec := busyboxSpec(t)
	spec.Ports = []uint32{8080}
	ni := create(t, r, spec)
	require.Equal(t, "127.0.0.1", ni.ExternalIP)
	require.NotEmpty(t, ni.InternalIP)
	require.Len(t, ni.Ports, 1)
	require.Equal(t, uint32(8080), ni.Ports[0].ContainerPort)

	require.NoError(t, r.StreamIn(ctx, spec.Guid, "/home/vcap/www", "vcap", tarOf(t, map[string]string{"index.html": "hello drover\n"})))
	p, err := r.Exec(ctx, spec.Guid, executor.ProcessSpec{
		ID: "web", Path: "/bin/busybox", Args: []string{"httpd", "-f", "-p", "8080", "-h", "/home/vcap/www"}, User: "vcap",
	})
	require.NoError(t, err)

	url := fmt.Sprintf("http://%s:%d/index.html", ni.ExternalIP, ni.Ports[0].HostPort)
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && string(body) == "hello drover\n"
	}, 20*time.Second, 100*time.Millisecond, "GET %s", url)

	require.NoError(t, r.Check(ctx, spec.Guid, &modelsv1.Check{HttpCheck: &modelsv1.HTTPCheck{Port: 8080, Path: "/index.html"}}))
	err = r.Check(ctx, spec.Guid, &modelsv1.Check{HttpCheck: &modelsv1.HTTPCheck{Port: 8080, Path: "/missing"}})
	require.ErrorContains(t, err, "status 404")
	require.NoError(t, r.Check(ctx, spec.Guid, &modelsv1.Check{TcpCheck: &modelsv1.TCPCheck{Port: 8080}}))
	require.Error(t, r.Check(ctx, spec.Guid, &modelsv1.Check{TcpCheck: &modelsv1.TCPCheck{Port: 8081, ConnectTimeoutMs: 300}}))

	out, err := r.StreamOut(ctx, spec.Guid, "/home/vcap/www/index.html")
	require.NoError(t, err)
	tr := tar.NewReader(out)
	hdr, err := tr.Next()
	require.NoError(t, err)
	require.Equal(t, "index.html", hdr.Name)
	require.Equal(t, 2000, hdr.Uid, "streamed-in files belong to the user")
	body, _ := io.ReadAll(tr)
	require.Equal(t, "hello drover\n", string(body))
	_, err = tr.Next()
	require.ErrorIs(t, err, io.EOF)
	out.Close()

	usage, err := r.Usage(ctx, spec.Guid)
	require.NoError(t, err)
	require.NotZero(t, usage.MemoryBytes)
	require.NotZero(t, usage.Pids)
	require.NotZero(t, usage.CPUTimeNs)

	require.NoError(t, r.Destroy(ctx, spec.Guid))
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	exit, err := p.Wait(waitCtx)
	require.NoError(t, err)
	require.NotZero(t, exit.Code)
	requireNothingLeft(t, r, cfg, spec.Guid, ni.InternalIP)
	require.NoError(t, r.Destroy(ctx, spec.Guid), "destroy is idempotent")
	ctrs, err := r.List(ctx)
	require.NoError(t, err)
	require.Empty(t, ctrs)
}

func TestProcessSeesEnvUserNofileAndOutput(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	spec.Env = []string{"A=1", "B=2"}
	create(t, r, spec)

	var out, errOut syncBuffer
	p, err := r.Exec(context.Background(), spec.Guid, executor.ProcessSpec{
		ID: "env", Path: "/bin/sh", Args: []string{"-c", `echo "$A $B $HOME $USER"; id -u; ulimit -n; pwd; echo oops >&2; exit 3`},
		Env: []string{"B=3"}, User: "vcap", Nofile: 512, Dir: "/tmp", Stdout: &out, Stderr: &errOut,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exit, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, executor.ProcessExit{Code: 3}, exit)
	// stdout and stderr are kept apart, and both are complete when Wait returns.
	require.Equal(t, "1 3 /home/vcap vcap\n2000\n512\n/tmp\n", out.String())
	require.Equal(t, "oops\n", errOut.String())

	_, err = r.Exec(context.Background(), spec.Guid, executor.ProcessSpec{ID: "nobody", Path: "/bin/true", User: "no-such-user"})
	require.ErrorContains(t, err, "no-such-user")
}

func TestMemoryLimitOOMKillsAndSaysSo(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	events := r.Events(t.Context())
	spec := busyboxSpec(t)
	spec.Resource.MemoryMB = 32
	create(t, r, spec)

	exit, _, _ := run(t, r, spec.Guid, "", "dd if=/dev/zero of=/dev/null bs=128M count=1")
	require.True(t, exit.OOMKilled, "exit %+v", exit)
	require.Equal(t, 137, exit.Code)
	waitEvent(t, events, spec.Guid, executor.RuntimeOOM)

	exit, _, _ = run(t, r, spec.Guid, "", "dd if=/dev/zero of=/dev/null bs=1M count=1")
	require.Equal(t, executor.ProcessExit{}, exit, "a small allocation still works and is no OOM")
}

func TestMaxPidsLimitsForks(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	spec.Resource.MaxPids = 8
	create(t, r, spec)

	exit, out, errOut := run(t, r, spec.Guid, "", `i=0; while [ $i -lt 20 ]; do sleep 30 & i=$((i+1)); done; echo started`)
	require.Contains(t, errOut, "can't fork", "exit %+v", exit)
	require.NotContains(t, out, "started")
}

func TestUnprivilegedCannotMountPrivilegedCan(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	unpriv := busyboxSpec(t)
	priv := busyboxSpec(t)
	priv.Privileged = true
	create(t, r, unpriv)
	create(t, r, priv)

	const mount = "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m"
	exit, _, _ := run(t, r, unpriv.Guid, "", mount)
	require.NotZero(t, exit.Code, "unprivileged mount must fail")
	exit, _, errOut := run(t, r, priv.Guid, "", mount)
	require.Zero(t, exit.Code, "privileged mount: %s", errOut)

	// No CAP_SYS_MODULE (16) nor CAP_SYS_ADMIN (21) for unprivileged, and no_new_privs.
	_, out, _ := run(t, r, unpriv.Guid, "", "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")
	var capEff uint64
	var nnp int
	_, err := fmt.Sscanf(strings.ReplaceAll(out, "\t", " "), "CapEff: %x\nNoNewPrivs: %d", &capEff, &nnp)
	require.NoError(t, err, out)
	require.Zero(t, capEff&(1<<16), "CAP_SYS_MODULE")
	require.Zero(t, capEff&(1<<21), "CAP_SYS_ADMIN")
	require.Equal(t, 1, nnp)
}

func TestDiskOverLimitStopsProcesses(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	r.diskByPolling = true // the fallback where the filesystem has no quotas
	events := r.Events(t.Context())
	spec := busyboxSpec(t)
	spec.Resource.DiskMB = 5
	create(t, r, spec)
	require.False(t, diskQuotaEnforced(t, r, spec.Guid), "the poll enforces disk_mb")

	exit, _, _ := run(t, r, spec.Guid, "", "dd if=/dev/zero of=/tmp/big bs=1M count=20 && sleep 3600")
	require.Equal(t, 137, exit.Code)
	ev := waitEvent(t, events, spec.Guid, executor.RuntimeDiskExceeded)
	require.Regexp(t, `^disk quota exceeded: wrote 2\d MB, limit 5 MB$`, ev.Reason)
	usage, err := r.Usage(context.Background(), spec.Guid)
	require.NoError(t, err)
	require.Greater(t, usage.DiskBytes, uint64(20<<20)-1)
}

func TestRestartedRuntimeListsAndReattaches(t *testing.T) {
	cfg := testConfig(t)
	r1 := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	spec.Ports = []uint32{8080}
	ni := create(t, r1, spec)
	var out1 syncBuffer
	_, err := r1.Exec(context.Background(), spec.Guid, executor.ProcessSpec{
		ID: "ticker", Path: "/bin/sh", Args: []string{"-c", `i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done`},
		Stdout: &out1,
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out1.String(), "tick 1\n") }, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, r1.Close())

	r2 := newTestRuntime(t, cfg)
	ctrs, err := r2.List(context.Background())
	require.NoError(t, err)
	require.Len(t, ctrs, 1)
	require.Equal(t, spec.Guid, ctrs[0].Guid)
	require.True(t, ctrs[0].Alive)
	require.Equal(t, spec.Tags, ctrs[0].Tags)
	require.Equal(t, spec.State, ctrs[0].State)
	require.Equal(t, ni, ctrs[0].NetInfo)

	var out2 syncBuffer
	p, err := r2.Reattach(context.Background(), spec.Guid, "ticker", &out2, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Count(out2.String(), "tick") >= 2 }, 10*time.Second, 50*time.Millisecond)
	require.NotContains(t, out2.String(), "tick 0\n", "reattach streams further output only")
	require.NoError(t, p.Signal(context.Background(), 9))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exit, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, 137, exit.Code)
	require.NoError(t, r2.Destroy(context.Background(), spec.Guid))
	requireNothingLeft(t, r2, cfg, spec.Guid, ni.InternalIP)
}

func TestCreateFailureLeavesNothingAndUnknownRootFSIsRefused(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	spec := busyboxSpec(t)
	spec.RootFS = "ftp://example/image"
	_, err := r.Create(context.Background(), spec)
	require.ErrorIs(t, err, executor.ErrUnsupportedRootFS)
	require.ErrorIs(t, r.CheckRootFS("preloaded:nope"), executor.ErrUnsupportedRootFS)
	require.NoError(t, r.CheckRootFS("preloaded:busybox"))
	require.NoError(t, r.CheckRootFS("docker:///library/busybox#1.36"))

	spec = busyboxSpec(t)
	spec.Ports = []uint32{8080}
	spec.BindMounts = []executor.BindMount{{Source: "/nonexistent/" + randHex(t, 4), Destination: "/x"}}
	_, err = r.Create(context.Background(), spec)
	require.Error(t, err)
	requireNothingLeft(t, r, cfg, spec.Guid, "")
	ctrs, err := r.List(context.Background())
	require.NoError(t, err)
	require.Empty(t, ctrs)
}

func TestVanishedInitIsReported(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	events := r.Events(t.Context())
	spec := busyboxSpec(t)
	create(t, r, spec)
	_, task, err := r.loadTask(r.ctx, spec.Guid)
	require.NoError(t, err)
	require.NoError(t, task.Kill(r.ctx, 9))
	ev := waitEvent(t, events, spec.Guid, executor.RuntimeVanished)
	require.NotEmpty(t, ev.Reason)
	require.Eventually(t, func() bool {
		ctrs, err := r.List(context.Background())
		return err == nil && len(ctrs) == 1 && !ctrs[0].Alive
	}, 10*time.Second, 50*time.Millisecond)
}
