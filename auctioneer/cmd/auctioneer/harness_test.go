package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"drover.dev/bbs/models"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/proctest"
	"drover.dev/lib/tlsconfig"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// binDir holds the auctioneer binary TestMain builds.
var binDir string

func TestMain(m *testing.M) {
	proctest.BuildAndRun(m, &binDir, map[string]string{".": "auctioneer"})
}

// certs is a dev CA directory: components use the "bbs" certificate (127.0.0.1, server
// and client use), the test the "client" one.
type certs struct{ dir string }

func newCerts(t *testing.T) certs {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	return certs{dir: dir}
}

func (c certs) files(name string) tlsconfig.Files {
	return tlsconfig.Files{CAFile: filepath.Join(c.dir, "ca.crt"), CertFile: filepath.Join(c.dir, name+".crt"), KeyFile: filepath.Join(c.dir, name+".key")}
}

func (c certs) serverTLS(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := c.files("bbs").Server()
	require.NoError(t, err)
	return cfg
}

func (c certs) clientTLS(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := c.files("client").Client()
	require.NoError(t, err)
	return cfg
}

// serve runs a gRPC server with mTLS on a free loopback port until the test ends.
func serve(t *testing.T, tlsConfig *tls.Config, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(tlsConfig)))
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// fakeBBS serves the lock, cell, actual LRP and task calls the auctioneer makes.
type fakeBBS struct {
	bbsv1.UnimplementedLockServiceServer
	bbsv1.UnimplementedCellServiceServer
	bbsv1.UnimplementedActualLRPServiceServer
	bbsv1.UnimplementedTaskServiceServer

	mu       sync.Mutex
	holder   string
	expires  time.Time
	attempts map[string]int
	cells    []*modelsv1.CellPresence
	failed   map[string]string
	rejected map[string]string
}

func newFakeBBS() *fakeBBS {
	return &fakeBBS{attempts: map[string]int{}, failed: map[string]string{}, rejected: map[string]string{}}
}

func (f *fakeBBS) register(srv *grpc.Server) {
	bbsv1.RegisterLockServiceServer(srv, f)
	bbsv1.RegisterCellServiceServer(srv, f)
	bbsv1.RegisterActualLRPServiceServer(srv, f)
	bbsv1.RegisterTaskServiceServer(srv, f)
}

func (f *fakeBBS) AcquireLock(_ context.Context, req *bbsv1.AcquireLockRequest) (*bbsv1.AcquireLockResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[req.GetOwner()]++
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

func (f *fakeBBS) ListCells(context.Context, *bbsv1.ListCellsRequest) (*bbsv1.ListCellsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &bbsv1.ListCellsResponse{Cells: f.cells}, nil
}

func (f *fakeBBS) FailActualLRP(_ context.Context, req *bbsv1.FailActualLRPRequest) (*bbsv1.FailActualLRPResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := req.GetActualLrpKey()
	f.failed[fmt.Sprintf("%s.%d", key.GetProcessGuid(), key.GetIndex())] = req.GetErrorMessage()
	return &bbsv1.FailActualLRPResponse{}, nil
}

func (f *fakeBBS) RejectTask(_ context.Context, req *bbsv1.RejectTaskRequest) (*bbsv1.RejectTaskResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejected[req.GetTaskGuid()] = req.GetRejectionReason()
	return &bbsv1.RejectTaskResponse{}, nil
}

func (f *fakeBBS) setHolder(owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holder, f.expires = owner, time.Now().Add(time.Hour)
}

func (f *fakeBBS) lockState(owner string) (holder string, attempts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holder, f.attempts[owner]
}

func (f *fakeBBS) failures() (failed, rejected map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	failed, rejected = map[string]string{}, map[string]string{}
	for k, v := range f.failed {
		failed[k] = v
	}
	for k, v := range f.rejected {
		rejected[k] = v
	}
	return failed, rejected
}

// fakeRep is a cell with 1 GB of memory and preloaded:busybox that takes all work.
type fakeRep struct {
	repv1.UnimplementedRepServiceServer
	cellID    string
	mu        sync.Mutex
	performed []string
}

func (f *fakeRep) State(context.Context, *repv1.StateRequest) (*repv1.StateResponse, error) {
	capacity := &modelsv1.CellCapacity{MemoryMb: 1024, DiskMb: 4096, Containers: 10}
	return &repv1.StateResponse{
		CellId: f.cellID, Zone: "z1", AvailableResources: capacity, TotalResources: capacity,
		RootfsProviders: []*modelsv1.RootFSProvider{{Name: "preloaded", Properties: []string{"busybox"}}},
	}, nil
}

func (f *fakeRep) Perform(_ context.Context, req *repv1.PerformRequest) (*repv1.PerformResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, lrp := range req.GetLrps() {
		f.performed = append(f.performed, fmt.Sprintf("%s.%d", lrp.GetProcessGuid(), lrp.GetIndex()))
	}
	for _, task := range req.GetTasks() {
		f.performed = append(f.performed, task.GetTaskGuid())
	}
	return &repv1.PerformResponse{}, nil
}

func (f *fakeRep) work() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.performed...)
}

// startAuctioneer writes cfg and runs the binary; it is killed at cleanup if still running.
func startAuctioneer(t *testing.T, cfg map[string]any) *proctest.Process {
	t.Helper()
	return proctest.Start(t, "auctioneer", filepath.Join(binDir, "auctioneer"), "-config", proctest.WriteJSON(t, "auctioneer.json", cfg))
}

// healthStatus is the overall health status, or UNKNOWN when the check fails.
func healthStatus(conn *grpc.ClientConn) healthpb.HealthCheckResponse_ServingStatus {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return resp.GetStatus()
}
