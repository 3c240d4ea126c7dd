package main

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"drover.dev/bbs/models"
	"drover.dev/lib/proctest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

const (
	waitTimeout = 30 * time.Second
	pollEvery   = 20 * time.Millisecond
)

// binDir holds the binaries TestMain builds: the converger, and the BBS for the test
// against a real one.
var binDir string

func TestMain(m *testing.M) {
	proctest.BuildAndRun(m, &binDir, map[string]string{".": "converger", "drover.dev/bbs/cmd/bbs": "bbs"})
}

// startConverger writes cfg and runs the binary; it is killed at cleanup if still running.
func startConverger(t *testing.T, cfg map[string]any) *proctest.Process {
	t.Helper()
	return proctest.Start(t, "converger", filepath.Join(binDir, "converger"), "-config", proctest.WriteJSON(t, "converger.json", cfg))
}

// fakeBBS serves the lock and convergence calls over plaintext gRPC: a snapshot with one
// DesiredLRP of two instances and one RUNNING row, so each pass creates index 1.
type fakeBBS struct {
	bbsv1.UnimplementedLockServiceServer
	bbsv1.UnimplementedConvergenceServiceServer

	mu      sync.Mutex
	holder  string
	expires time.Time
	applied []*bbsv1.LRPAction
	reports []*bbsv1.ConvergencePass
}

// serveFake runs a fake BBS on a free loopback port until the test ends.
func serveFake(t *testing.T) (*fakeBBS, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeBBS{}
	srv := grpc.NewServer()
	bbsv1.RegisterLockServiceServer(srv, f)
	bbsv1.RegisterConvergenceServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return f, lis.Addr().String()
}

func (f *fakeBBS) AcquireLock(_ context.Context, req *bbsv1.AcquireLockRequest) (*bbsv1.AcquireLockResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holder != "" && f.holder != req.GetOwner() && time.Now().Before(f.expires) {
		return nil, models.ErrLockCollision
	}
	f.holder, f.expires = req.GetOwner(), time.Now().Add(time.Duration(req.GetTtlSeconds())*time.Second)
	return &bbsv1.AcquireLockResponse{Lock: &modelsv1.Lock{Key: req.GetKey(), Owner: req.GetOwner()}}, nil
}

func (f *fakeBBS) ReleaseLock(_ context.Context, req *bbsv1.ReleaseLockRequest) (*bbsv1.ReleaseLockResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holder == req.GetOwner() {
		f.holder = ""
	}
	return &bbsv1.ReleaseLockResponse{}, nil
}

func (f *fakeBBS) Snapshot(_ *bbsv1.SnapshotRequest, stream grpc.ServerStreamingServer[bbsv1.SnapshotResponse]) error {
	parts := []*bbsv1.SnapshotResponse{
		{TakenAt: time.Now().UnixNano(), FreshDomains: []string{"cf-apps"}, Cells: []*modelsv1.CellPresence{{CellId: "cell-1"}}},
		{SchedulingInfos: []*modelsv1.DesiredLRPSchedulingInfo{{ProcessGuid: "web", Domain: "cf-apps", Instances: 2,
			ModificationTag: &modelsv1.ModificationTag{Epoch: "d", Index: 1}}}},
		{ActualLrps: []*modelsv1.ActualLRP{{ProcessGuid: "web", Index: 0, Domain: "cf-apps", CellId: "cell-1",
			State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING, ModificationTag: &modelsv1.ModificationTag{Epoch: "a", Index: 1}}}},
	}
	for _, p := range parts {
		if err := stream.Send(p); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeBBS) ApplyLRPActions(_ context.Context, req *bbsv1.ApplyLRPActionsRequest) (*bbsv1.ApplyLRPActionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &bbsv1.ApplyLRPActionsResponse{}
	for _, a := range req.GetActions() {
		f.applied = append(f.applied, a)
		resp.Results = append(resp.Results, &bbsv1.LRPActionResult{Applied: true})
	}
	return resp, nil
}

func (f *fakeBBS) ReportConvergencePass(_ context.Context, req *bbsv1.ReportConvergencePassRequest) (*bbsv1.ReportConvergencePassResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, req.GetPass())
	return &bbsv1.ReportConvergencePassResponse{}, nil
}

func (f *fakeBBS) RequestAuctions(context.Context, *bbsv1.RequestAuctionsRequest) (*bbsv1.RequestAuctionsResponse, error) {
	return &bbsv1.RequestAuctionsResponse{}, nil
}

func (f *fakeBBS) setHolder(owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holder, f.expires = owner, time.Now().Add(time.Hour)
}

func (f *fakeBBS) lockHolder() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holder
}

// passes returns the reported passes so far.
func (f *fakeBBS) passes() []*bbsv1.ConvergencePass {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*bbsv1.ConvergencePass(nil), f.reports...)
}

// convergerConfig points a converger at bbsAddr over plaintext with short timings.
func convergerConfig(t *testing.T, bbsAddr, owner string) map[string]any {
	return map[string]any{
		"debug_address":       proctest.ReserveAddress(t),
		"bbs_address":         bbsAddr,
		"lock_ttl":            "2s",
		"lock_retry_interval": "100ms",
		"lock_owner":          owner,
		"repeat_interval":     "100ms",
		"log_level":           "debug",
	}
}
