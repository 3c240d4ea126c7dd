package commands_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/jsonapi"
	"drover.dev/ctl/commands"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// seedLRP is a DesiredLRPCreateRequest written the way the LRP API documents it.
const seedLRP = `{
  "process_guid": "web",
  "domain": "cf-apps",
  "instances": 2,
  "rootfs": "preloaded:cflinuxfs4",
  "env": [{"name": "PORT", "value": "8080"}],
  "memory_mb": 256,
  "disk_mb": 1024,
  "action": {"run": {"path": "/app/server", "args": ["--port", "8080"], "user": "vcap"}},
  "ports": [8080],
  "routes": {"cf-router": [{"hostnames": ["web.example.com"], "port": 8080}]}
}`

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// rowFields splits a rendered table into the words of each line.
func rowFields(s string) [][]string {
	var rows [][]string
	for _, line := range lines(s) {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

func desiredFixtures(t *testing.T) []*modelsv1.DesiredLRP {
	t.Helper()
	web, err := jsonapi.DecodeDesiredLRP([]byte(seedLRP))
	require.NoError(t, err)
	web.CreatedAt = testNow.Add(-time.Hour).UnixNano()
	worker := &modelsv1.DesiredLRP{ProcessGuid: "worker", Domain: "jobs", Instances: 1, Rootfs: "docker:///busybox"}
	return []*modelsv1.DesiredLRP{web, worker}
}

func TestDesiredLRPs(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) { f.desired = desiredFixtures(t) })

	res := run(t, ft.env, "desired-lrps")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, [][]string{
		{"PROCESS_GUID", "DOMAIN", "INSTANCES", "ROOTFS", "MEMORY_MB", "DISK_MB", "PORTS", "ROUTERS", "AGE"},
		{"web", "cf-apps", "2", "preloaded:cflinuxfs4", "256", "1024", "8080", "cf-router", "1h"},
		{"worker", "jobs", "1", "docker:///busybox", "0", "0", "-", "-", "-"},
	}, rowFields(res.stdout))

	res = run(t, ft.env, "desired-lrps", "--domain", "cf-apps", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.True(t, proto.Equal(&bbsv1.ListDesiredLRPsRequest{Domain: "cf-apps"}, ft.bbs.lastRequest(t)))
	out := lines(res.stdout)
	require.Len(t, out, 1)
	roundTrip, err := jsonapi.DecodeDesiredLRP([]byte(out[0]))
	require.NoError(t, err, "--json prints what desire -f accepts")
	require.True(t, proto.Equal(desiredFixtures(t)[0], roundTrip))
	var fields map[string]any
	require.NoError(t, json.Unmarshal([]byte(out[0]), &fields))
	require.Equal(t, "web", fields["process_guid"])
	require.Equal(t, []any{map[string]any{"hostnames": []any{"web.example.com"}, "port": float64(8080)}},
		fields["routes"].(map[string]any)["cf-router"])
}

func TestDesiredLRP(t *testing.T) {
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.desired = desiredFixtures(t)
		f.actual = []*modelsv1.ActualLRP{
			{ProcessGuid: "web", Index: 1, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, PlacementError: "no cell has 256 MB free"},
			{ProcessGuid: "web", Index: 0, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, CellId: "cell-1"},
			{ProcessGuid: "worker", Index: 0, State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, CellId: "cell-2"},
		}
	})

	res := run(t, ft.env, "desired-lrp", "web")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	details, instances, found := strings.Cut(res.stdout, "\n\n")
	require.True(t, found, "details and instances are separated by a blank line:\n%s", res.stdout)
	require.Contains(t, lines(details), "process_guid:    web")
	require.Contains(t, lines(details), "instances:       2")
	require.Equal(t, [][]string{
		{"PROCESS_GUID", "INDEX", "STATE", "CELL", "ADDRESS", "PORTS", "CRASHES", "SINCE", "PLACEMENT_ERROR", "REASON"},
		{"web", "0", "RUNNING", "cell-1", "-", "-", "0", "-", "-", "-"},
		{"web", "1", "UNCLAIMED", "-", "-", "-", "0", "-", "no", "cell", "has", "256", "MB", "free", "-"},
	}, rowFields(instances))
	require.True(t, proto.Equal(&bbsv1.ListActualLRPsRequest{ProcessGuid: "web"}, ft.bbs.lastRequest(t)))

	res = run(t, ft.env, "--json", "desired-lrp", "web")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Len(t, lines(res.stdout), 1)
	decoded, err := jsonapi.DecodeDesiredLRP([]byte(res.stdout))
	require.NoError(t, err)
	require.Equal(t, "web", decoded.GetProcessGuid())

	res = run(t, ft.env, "desired-lrp", "nope")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Equal(t, "droverctl: ResourceNotFound: desired LRP nope not found\n", res.stderr)
	require.Empty(t, res.stdout)
}

func TestDesire(t *testing.T) {
	ft := startFakeBBS(t, nil)
	want, err := jsonapi.DecodeDesiredLRP([]byte(seedLRP))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "web.json")
	require.NoError(t, os.WriteFile(file, []byte(seedLRP), 0o600))

	// -f is also spelled --file, and --f as before.
	for _, flag := range []string{"-f", "--file", "--f", "-f=" + file, "--file=" + file} {
		args := []string{"desire", flag, file}
		if strings.Contains(flag, "=") {
			args = args[:2]
		}
		res := run(t, ft.env, args...)
		require.Equal(t, commands.ExitOK, res.code, "%v: %s", args, res.stderr)
		require.Equal(t, "desired LRP web with 2 instances\n", res.stdout)
		require.True(t, proto.Equal(&bbsv1.DesireLRPRequest{DesiredLrp: want}, ft.bbs.lastRequest(t)))
	}

	stdinEnv := ft.env
	stdinEnv.Stdin = strings.NewReader(seedLRP)
	res := run(t, stdinEnv, "desire", "--json", "-f", "-")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Empty(t, res.stdout, "--json stays silent on success")
	require.True(t, proto.Equal(&bbsv1.DesireLRPRequest{DesiredLrp: want}, ft.bbs.lastRequest(t)))
	before := len(ft.bbs.recorded())

	badEnv := ft.env
	badEnv.Stdin = strings.NewReader(`{"process_guid": "web", "instancez": 2}`)
	res = run(t, badEnv, "desire", "-f", "-")
	require.Equal(t, commands.ExitFailure, res.code)
	require.True(t, strings.HasPrefix(res.stderr, "droverctl: InvalidJSON: "), res.stderr)
	require.Contains(t, res.stderr, "instancez")

	res = run(t, ft.env, "desire", "-f", filepath.Join(t.TempDir(), "missing.json"))
	require.Equal(t, commands.ExitFailure, res.code)
	require.True(t, strings.HasPrefix(res.stderr, "droverctl: InvalidRequest: reading "), res.stderr)
	require.Contains(t, res.stderr, "no such file")
	require.Len(t, ft.bbs.recorded(), before, "bad input reaches no BBS call")
}

func TestScaleAndDelete(t *testing.T) {
	ft := startFakeBBS(t, nil)
	tests := []struct {
		args       []string
		wantStdout string
		wantReq    proto.Message
	}{
		{
			args: []string{"scale", "web", "5"}, wantStdout: "scaled web to 5 instances\n",
			wantReq: &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(5)}},
		},
		{
			args: []string{"scale", "web", "0"}, wantStdout: "scaled web to 0 instances\n",
			wantReq: &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: &modelsv1.DesiredLRPUpdate{Instances: proto.Int32(0)}},
		},
		{
			args: []string{"delete", "web"}, wantStdout: "removed desired LRP web\n",
			wantReq: &bbsv1.RemoveDesiredLRPRequest{ProcessGuid: "web"},
		},
		{
			args: []string{"kill", "web", "3"}, wantStdout: "retired instance web/3\n",
			wantReq: &bbsv1.RetireActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "web", Index: 3}},
		},
		{
			args: []string{"kill", "web", "3", "--json"}, wantStdout: "",
			wantReq: &bbsv1.RetireActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: "web", Index: 3}},
		},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			res := run(t, ft.env, tt.args...)
			require.Equal(t, commands.ExitOK, res.code, res.stderr)
			require.Equal(t, tt.wantStdout, res.stdout)
			got := ft.bbs.lastRequest(t)
			require.True(t, proto.Equal(tt.wantReq, got), "got %v", got)
		})
	}
}
