package commands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/ctl/commands"
	"drover.dev/ctl/target"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

func actualFixtures() []*modelsv1.ActualLRP {
	running := modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	return []*modelsv1.ActualLRP{
		{ProcessGuid: "web", Index: 1, Domain: "cf", State: running, CellId: "cell-2", Since: testNow.Add(-time.Minute).UnixNano()},
		{ProcessGuid: "api", Index: 0, Domain: "cf", State: running, CellId: "cell-1", InstanceGuid: "i-1",
			NetInfo: &modelsv1.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}},
		{ProcessGuid: "web", Index: 0, Domain: "cf", State: running, CellId: "cell-1"},
		{ProcessGuid: "web", Index: 2, Domain: "cf", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED, CrashCount: 4, CrashReason: "out-of-memory"},
		{ProcessGuid: "job", Index: 0, Domain: "batch", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED, CellId: "cell-2"},
	}
}

func TestActualLRPs(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.actual = actualFixtures() })

	res := run(t, ft.env, "actual-lrps")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, [][]string{
		{"PROCESS_GUID", "INDEX", "STATE", "CELL", "ADDRESS", "PORTS", "CRASHES", "SINCE", "PLACEMENT_ERROR", "REASON"},
		{"api", "0", "RUNNING", "cell-1", "10.0.0.1", "8080:61000", "0", "-", "-", "-"},
		{"job", "0", "CLAIMED", "cell-2", "-", "-", "0", "-", "-", "-"},
		{"web", "0", "RUNNING", "cell-1", "-", "-", "0", "-", "-", "-"},
		{"web", "1", "RUNNING", "cell-2", "-", "-", "0", "1m", "-", "-"},
		{"web", "2", "CRASHED", "-", "-", "-", "4", "-", "-", "out-of-memory"},
	}, rowFields(res.stdout), "all three batches, sorted by guid and index")

	res = run(t, ft.env, "actual-lrps", "--domain", "cf", "--cell", "cell-1", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.ListActualLRPsRequest{Domain: "cf", CellId: "cell-1"}, ft.bbs.lastRequest(t)))
	var views []map[string]any
	for _, line := range lines(res.stdout) {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), "each line is one JSON object: %s", line)
		views = append(views, v)
	}
	require.Len(t, views, 2)
	require.Equal(t, "api", views[0]["process_guid"])
	require.Equal(t, "RUNNING", views[0]["state"])
	require.Equal(t, "i-1", views[0]["instance_guid"])
	require.Equal(t, "web", views[1]["process_guid"])

	res = run(t, ft.env, "actual-lrps", "--guid", "web", "--index", "2")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.ListActualLRPsRequest{ProcessGuid: "web", Index: proto.Int32(2)}, ft.bbs.lastRequest(t)))
	require.Len(t, lines(res.stdout), 2)

	res = run(t, ft.env, "actual-lrps", "--guid", "none")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "PROCESS_GUID  INDEX  STATE  CELL  ADDRESS  PORTS  CRASHES  SINCE  PLACEMENT_ERROR  REASON\n", res.stdout)
	res = run(t, ft.env, "actual-lrps", "--guid", "none", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Empty(t, res.stdout, "no rows, no JSON lines")
}

func TestDomains(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.domains = []string{"cf-apps", "cf-tasks"} })

	res := run(t, ft.env, "domains")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "DOMAIN\ncf-apps\ncf-tasks\n", res.stdout)

	res = run(t, ft.env, "domains", "--json")
	require.Equal(t, "{\"domain\":\"cf-apps\"}\n{\"domain\":\"cf-tasks\"}\n", res.stdout)

	tests := []struct {
		args       []string
		wantTTL    uint32
		wantStdout string
	}{
		{[]string{"set-domain", "cf-apps", "--ttl", "2m"}, 120, "domain cf-apps is fresh for 2m0s\n"},
		{[]string{"set-domain", "--ttl", "120", "cf-apps"}, 120, "domain cf-apps is fresh for 2m0s\n"},
		{[]string{"set-domain", "cf-apps"}, 0, "domain cf-apps is fresh forever\n"},
		{[]string{"set-domain", "cf-apps", "--ttl", "0"}, 0, "domain cf-apps is fresh forever\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			res := run(t, ft.env, tt.args...)
			require.Equal(t, commands.ExitOK, res.code, res.stderr)
			require.Equal(t, tt.wantStdout, res.stdout)
			require.True(t, proto.Equal(&bbsv1.UpsertDomainRequest{Domain: "cf-apps", TtlSeconds: tt.wantTTL}, ft.bbs.lastRequest(t)))
		})
	}
}

func TestTasksCellsLocks(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.tasks = []*modelsv1.Task{{
			TaskGuid: "t-1", Domain: "d", State: modelsv1.TaskState_TASK_STATE_RUNNING, CellId: "cell-1",
			TaskDefinition: &modelsv1.TaskDefinition{Rootfs: "preloaded:cflinuxfs4", MemoryMb: 64},
		}}
		f.cells = []*modelsv1.CellPresence{{
			CellId: "cell-1", Zone: "z1", RepAddress: "10.0.0.1:1800",
			Capacity:  &modelsv1.CellCapacity{MemoryMb: 4096, DiskMb: 8192, Containers: 100},
			ExpiresAt: testNow.Add(20 * time.Second).UnixNano(),
		}}
		f.locks = []*modelsv1.Lock{{Key: "converger", Owner: "conv-0", ExpiresAt: testNow.Add(10 * time.Second).UnixNano(), ModifiedIndex: 3}}
	})

	tests := []struct {
		args      []string
		wantReq   proto.Message
		wantTable [][]string
		wantJSON  map[string]any
	}{
		{
			args:    []string{"tasks", "--domain", "d", "--cell", "cell-1"},
			wantReq: &bbsv1.ListTasksRequest{Domain: "d", CellId: "cell-1"},
			wantTable: [][]string{
				{"TASK_GUID", "DOMAIN", "STATE", "CELL", "FAILED", "FAILURE_REASON", "UPDATED"},
				{"t-1", "d", "RUNNING", "cell-1", "false", "-", "-"},
			},
			wantJSON: map[string]any{"task_guid": "t-1", "state": "RUNNING", "cell_id": "cell-1"},
		},
		{
			args:    []string{"cells"},
			wantReq: &bbsv1.ListCellsRequest{},
			wantTable: [][]string{
				{"CELL_ID", "ZONE", "REP_ADDRESS", "MEMORY_MB", "DISK_MB", "CONTAINERS", "ROOTFS", "PLACEMENT_TAGS", "CORDONED", "EXPIRES", "CORDON_REASON"},
				{"cell-1", "z1", "10.0.0.1:1800", "4096", "8192", "100", "-", "-", "no", "in", "20s", "-"},
			},
			wantJSON: map[string]any{"cell_id": "cell-1", "rep_address": "10.0.0.1:1800", "cordoned": false},
		},
		{
			args:    []string{"locks"},
			wantReq: &bbsv1.ListLocksRequest{},
			wantTable: [][]string{
				{"KEY", "OWNER", "VALUE", "EXPIRES"},
				{"converger", "conv-0", "-", "in", "10s"},
			},
			wantJSON: map[string]any{"key": "converger", "owner": "conv-0", "expires_at": "2026-11-22T12:00:10Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			res := run(t, ft.env, tt.args...)
			require.Equal(t, commands.ExitOK, res.code, res.stderr)
			require.Equal(t, tt.wantTable, rowFields(res.stdout))
			require.True(t, proto.Equal(tt.wantReq, ft.bbs.lastRequest(t)))

			res = run(t, ft.env, append(tt.args, "--json")...)
			require.Equal(t, commands.ExitOK, res.code, res.stderr)
			require.Len(t, lines(res.stdout), 1)
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
			for k, v := range tt.wantJSON {
				require.Equal(t, v, got[k], "field %s", k)
			}
		})
	}
}

func TestTargetSelection(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.domains = []string{"d"} })

	t.Run("flags win over the environment", func(t *testing.T) {
		env := ft.env
		env.Vars = map[string]string{target.EnvAddress: "127.0.0.1:1"}
		res := run(t, env, "--bbs-address", ft.addr, "domains")
		require.Equal(t, commands.ExitOK, res.code, res.stderr)
		require.Equal(t, "DOMAIN\nd\n", res.stdout)
	})

	t.Run("explicit certificate files need no .drover", func(t *testing.T) {
		env := commands.Env{WorkDir: t.TempDir(), Vars: map[string]string{
			target.EnvCACert:     ft.pki.client.CAFile,
			target.EnvClientCert: ft.pki.client.CertFile,
		}}
		res := run(t, env, "domains", "--bbs-address", ft.addr, "--client-key", ft.pki.client.KeyFile)
		require.Equal(t, commands.ExitOK, res.code, res.stderr)
	})

	t.Run("DROVER_HOME", func(t *testing.T) {
		env := commands.Env{WorkDir: t.TempDir(), Vars: map[string]string{
			target.EnvAddress: ft.addr,
			target.EnvHome:    filepath.Dir(filepath.Dir(ft.pki.dir)), // the directory holding .drover
		}}
		res := run(t, env, "domains")
		require.Equal(t, commands.ExitOK, res.code, res.stderr)
	})

	t.Run("a server certificate from another CA is refused", func(t *testing.T) {
		other := newTestPKI(t, t.TempDir())
		env := ft.env
		env.Vars = map[string]string{target.EnvAddress: ft.addr, target.EnvCACert: other.client.CAFile}
		res := run(t, env, "domains")
		require.Equal(t, commands.ExitFailure, res.code)
		require.True(t, strings.HasPrefix(res.stderr, "droverctl: Unavailable: bbs "+ft.addr+": "), res.stderr)
		require.Contains(t, res.stderr, "certificate")
	})

	t.Run("missing certificate files", func(t *testing.T) {
		env := ft.env
		env.Vars = map[string]string{target.EnvAddress: ft.addr, target.EnvClientKey: "/nonexistent/client.key"}
		res := run(t, env, "domains")
		require.Equal(t, commands.ExitFailure, res.code)
		require.True(t, strings.HasPrefix(res.stderr, "droverctl: InvalidTarget: bbs "+ft.addr), res.stderr)
		require.Contains(t, res.stderr, "/nonexistent/client.key")
	})
}

func TestConnectionFailures(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.hang = true })

	t.Run("nobody listening", func(t *testing.T) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		closed := lis.Addr().String()
		require.NoError(t, lis.Close())
		res := run(t, ft.env, "--bbs-address", closed, "domains")
		require.Equal(t, commands.ExitFailure, res.code)
		require.True(t, strings.HasPrefix(res.stderr, "droverctl: Unavailable: bbs "+closed+": "), res.stderr)
		require.Contains(t, res.stderr, "connection refused")
	})

	t.Run("no answer within the timeout", func(t *testing.T) {
		res := run(t, ft.env, "locks", "--timeout", "300ms")
		require.Equal(t, commands.ExitFailure, res.code)
		require.Equal(t, "droverctl: Unavailable: bbs "+ft.addr+" did not answer within 300ms (--timeout)\n", res.stderr)
	})
}

func TestInterrupted(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.hang = true })
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- commands.Run(ctx, []string{"locks"}, &stdout, &stderr, ft.env) }()
	require.Eventually(t, func() bool { return len(ft.bbs.recorded()) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the call reached the BBS")
	cancel()
	select {
	case code := <-done:
		require.Equal(t, commands.ExitInterrupted, code)
		require.Equal(t, "droverctl: interrupted\n", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("droverctl did not stop when interrupted")
	}
}

func TestNilWritersAndEmptyEnv(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.domains = []string{"d"} })
	require.Equal(t, commands.ExitOK, commands.Run(context.Background(), []string{"domains"}, nil, nil, ft.env))
	require.Equal(t, commands.ExitUsage, commands.Run(context.Background(), nil, nil, nil, commands.Env{}))

	var stderr bytes.Buffer
	code := commands.Run(context.Background(), []string{"desire", "-f", "-"}, nil, &stderr, commands.Env{})
	require.Equal(t, commands.ExitFailure, code)
	require.Equal(t, "droverctl: InvalidRequest: no standard input to read\n", stderr.String())
}
