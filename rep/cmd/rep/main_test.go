package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"drover.dev/lib/proctest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// binDir holds the rep binary TestMain builds.
var binDir string

func TestMain(m *testing.M) {
	proctest.BuildAndRun(m, &binDir, map[string]string{".": "rep"})
}

// fakeBBS is the BBS a cell with no work sees: it takes heartbeats and removals and
// lists nothing. Other calls are unimplemented.
type fakeBBS struct {
	bbsv1.UnimplementedCellServiceServer
	bbsv1.UnimplementedActualLRPServiceServer
	bbsv1.UnimplementedTaskServiceServer
	bbsv1.UnimplementedDesiredLRPServiceServer
	mu        sync.Mutex
	heartbeat int
	removed   []string
	calls     []string
	// keepRunning answers EvacuateRunningActualLRP this many times with keep=true.
	keepRunning int
}

func (f *fakeBBS) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeBBS) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == call {
			n++
		}
	}
	return n
}

func (f *fakeBBS) ClaimActualLRP(context.Context, *bbsv1.ClaimActualLRPRequest) (*bbsv1.ClaimActualLRPResponse, error) {
	f.record("claim")
	return &bbsv1.ClaimActualLRPResponse{}, nil
}

func (f *fakeBBS) StartActualLRP(context.Context, *bbsv1.StartActualLRPRequest) (*bbsv1.StartActualLRPResponse, error) {
	f.record("start")
	return &bbsv1.StartActualLRPResponse{}, nil
}

func (f *fakeBBS) GetDesiredLRP(_ context.Context, req *bbsv1.GetDesiredLRPRequest) (*bbsv1.GetDesiredLRPResponse, error) {
	return &bbsv1.GetDesiredLRPResponse{DesiredLrp: &modelsv1.DesiredLRP{
		ProcessGuid: req.GetProcessGuid(), Domain: "cf-apps", Rootfs: "preloaded:busybox", MemoryMb: 64, DiskMb: 64, Instances: 1,
		Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/sh", User: "root"}}},
	}}, nil
}

func (f *fakeBBS) EvacuateRunningActualLRP(context.Context, *bbsv1.EvacuateRunningActualLRPRequest) (*bbsv1.EvacuateRunningActualLRPResponse, error) {
	f.record("evacuate-running")
	f.mu.Lock()
	defer f.mu.Unlock()
	keep := f.keepRunning > 0
	f.keepRunning--
	return &bbsv1.EvacuateRunningActualLRPResponse{KeepContainer: keep}, nil
}

func (f *fakeBBS) HeartbeatCell(context.Context, *bbsv1.HeartbeatCellRequest) (*bbsv1.HeartbeatCellResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heartbeat++
	return &bbsv1.HeartbeatCellResponse{}, nil
}

func (f *fakeBBS) RemoveCell(_ context.Context, req *bbsv1.RemoveCellRequest) (*bbsv1.RemoveCellResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, req.GetCellId())
	return &bbsv1.RemoveCellResponse{}, nil
}

func (f *fakeBBS) ListActualLRPs(*bbsv1.ListActualLRPsRequest, grpc.ServerStreamingServer[bbsv1.ListActualLRPsResponse]) error {
	return nil
}

func (f *fakeBBS) ListTasks(context.Context, *bbsv1.ListTasksRequest) (*bbsv1.ListTasksResponse, error) {
	return &bbsv1.ListTasksResponse{}, nil
}

func (f *fakeBBS) removals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.removed...)
}

// serveFakeBBS serves a fake BBS in plaintext on a free port.
func serveFakeBBS(t *testing.T) (*fakeBBS, string) {
	t.Helper()
	f := &fakeBBS{}
	srv := grpc.NewServer()
	bbsv1.RegisterCellServiceServer(srv, f)
	bbsv1.RegisterActualLRPServiceServer(srv, f)
	bbsv1.RegisterTaskServiceServer(srv, f)
	bbsv1.RegisterDesiredLRPServiceServer(srv, f)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return f, lis.Addr().String()
}

// startRep runs the rep on the sim backend against bbsAddress and waits until it is
// started; it returns the process and the rep's address.
func startRep(t *testing.T, bbsAddress string, evacuateOnSigterm bool) (*proctest.Process, string) {
	t.Helper()
	listen := proctest.ReserveAddress(t)
	cfg := proctest.WriteJSON(t, "rep.json", map[string]any{
		"cell_id":                     "cell-" + strings.ReplaceAll(t.Name(), "/", "-"),
		"listen_address":              listen,
		"debug_address":               proctest.ReserveAddress(t),
		"bbs_address":                 bbsAddress,
		"presence_interval":           "100ms",
		"polling_interval":            "1s",
		"evacuate_on_sigterm":         evacuateOnSigterm,
		"evacuation_polling_interval": "50ms",
		"evacuation_timeout":          "5s",
		"preloaded_rootfses":          map[string]string{"busybox": "/unused-by-sim"},
		"executor":                    map[string]any{"backend": "sim", "state_dir": t.TempDir(), "sim_start_latency": "10ms"},
	})
	p := proctest.Start(t, "rep", filepath.Join(binDir, "rep"), "-config", cfg)
	require.Eventually(t, func() bool { return strings.Contains(p.Output(), `"msg":"rep-started"`) }, 20*time.Second, 20*time.Millisecond, "rep did not start")
	return p, listen
}

// repClient dials the rep in plaintext.
func repClient(t *testing.T, listen string) repv1.RepServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return repv1.NewRepServiceClient(conn)
}

func TestEvacuateRPCDrainsAndExitsZero(t *testing.T) {
	bbs, bbsAddress := serveFakeBBS(t)
	bbs.keepRunning = 2
	p, listen := startRep(t, bbsAddress, false)
	rep := repClient(t, listen)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// One running instance on the simulated executor.
	failed, err := rep.Perform(ctx, &repv1.PerformRequest{Lrps: []*repv1.LRPWork{{
		ProcessGuid: "pg-1", Index: 0, Domain: "cf-apps", Rootfs: "preloaded:busybox", Resource: &modelsv1.Resource{MemoryMb: 64, DiskMb: 64},
	}}})
	require.NoError(t, err)
	require.Empty(t, failed.GetFailedLrps())
	require.Eventually(t, func() bool { return bbs.count("start") > 0 }, 10*time.Second, 20*time.Millisecond, "instance did not start")

	resp, err := rep.Evacuate(ctx, &repv1.EvacuateRequest{})
	require.NoError(t, err)
	require.False(t, resp.GetAlreadyEvacuating())
	again, err := rep.Evacuate(ctx, &repv1.EvacuateRequest{})
	if err == nil { // the rep may already have finished
		require.True(t, again.GetAlreadyEvacuating())
	}

	require.Equal(t, 0, p.WaitExit(t, 20*time.Second))
	require.Equal(t, 3, bbs.count("evacuate-running"), "kept twice, released on the third poll")
	require.Len(t, bbs.removals(), 1, "the cell's presence is removed")
	require.Contains(t, p.Output(), `"msg":"evacuation-finished"`)
	require.Contains(t, p.Output(), `"reason":"no-containers-left"`)
}

func TestSigtermEvacuatesWhenConfigured(t *testing.T) {
	bbs, bbsAddress := serveFakeBBS(t)
	p, _ := startRep(t, bbsAddress, true)
	p.Signal(t, syscall.SIGTERM)
	require.Equal(t, 0, p.WaitExit(t, 20*time.Second))
	require.Len(t, bbs.removals(), 1, "the cell's presence is removed")
	require.Contains(t, p.Output(), `"msg":"evacuating-on-signal"`)
	require.Contains(t, p.Output(), `"msg":"evacuation-finished"`)
}

func TestSigtermWithoutEvacuationStopsAtOnce(t *testing.T) {
	bbs, bbsAddress := serveFakeBBS(t)
	p, _ := startRep(t, bbsAddress, false)
	p.Signal(t, syscall.SIGTERM)
	require.Equal(t, 0, p.WaitExit(t, 20*time.Second))
	require.Empty(t, bbs.removals(), "the presence is left to expire")
	require.NotContains(t, p.Output(), `"msg":"evacuation-started"`)
}
