package commands_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/models"
	"drover.dev/ctl/commands"
	"drover.dev/ctl/target"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// testNow is the clock every test run of droverctl sees.
var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// fakeBBS serves canned state over gRPC with mutual TLS and records every request.
// Its state is set before it starts serving and only read afterwards, except cells,
// actual and converger, which tests may change while it serves (setCells, setActual).
type fakeBBS struct {
	mu      sync.Mutex // guards requests, cells, actual, tasks and converger
	desired []*modelsv1.DesiredLRP
	actual  []*modelsv1.ActualLRP
	tasks   []*modelsv1.Task
	cells   []*modelsv1.CellPresence
	// converger is the status GetConvergerStatus answers; SetConvergerPaused changes it.
	converger *bbsv1.GetConvergerStatusResponse
	locks     []*modelsv1.Lock
	domains   []string
	requests  []proto.Message
	// subscribe serves EventService.Subscribe; the default replays nothing and waits.
	subscribe func(*bbsv1.SubscribeRequest, grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error
	// hang makes ListLocks wait until the client gives up.
	hang bool
	// pki is the certificates of the fake, for fake reps started in setup.
	pki testPKI
}

// fakeTarget is a running fakeBBS and the Env that finds it by discovery.
type fakeTarget struct {
	bbs  *fakeBBS
	env  commands.Env
	addr string
	pki  testPKI
}

// startFakeBBS runs a fakeBBS, its state filled in by setup before it serves, on
// 127.0.0.1 with certificates in <tmp>/.drover/certs. The returned Env starts
// discovery two levels below <tmp> and only sets the address.
func startFakeBBS(t *testing.T, setup func(*fakeBBS)) *fakeTarget {
	t.Helper()
	root := t.TempDir()
	pki := newTestPKI(t, filepath.Join(root, target.HomeDirName, "certs"))
	serverTLS, err := pki.server.Server()
	require.NoError(t, err)

	f := &fakeBBS{pki: pki}
	if setup != nil {
		setup(f)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	bbsv1.RegisterDesiredLRPServiceServer(srv, desiredServer{fakeBBS: f})
	bbsv1.RegisterActualLRPServiceServer(srv, actualServer{fakeBBS: f})
	bbsv1.RegisterTaskServiceServer(srv, taskServer{fakeBBS: f})
	bbsv1.RegisterDomainServiceServer(srv, domainServer{fakeBBS: f})
	bbsv1.RegisterCellServiceServer(srv, cellServer{fakeBBS: f})
	bbsv1.RegisterLockServiceServer(srv, lockServer{fakeBBS: f})
	bbsv1.RegisterEventServiceServer(srv, eventServer{fakeBBS: f})
	bbsv1.RegisterConvergenceServiceServer(srv, convergenceServer{fakeBBS: f})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	workDir := filepath.Join(root, "project", "sub")
	require.NoError(t, os.MkdirAll(workDir, 0o755))
	return &fakeTarget{
		bbs:  f,
		addr: lis.Addr().String(),
		pki:  pki,
		env: commands.Env{
			Vars:    map[string]string{target.EnvAddress: lis.Addr().String()},
			WorkDir: workDir,
			Now:     func() time.Time { return testNow },
		},
	}
}

// result is what one droverctl run printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// run runs droverctl in env with args.
func run(t *testing.T, env commands.Env, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := commands.Run(ctx, args, &stdout, &stderr, env)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func (f *fakeBBS) record(req proto.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, proto.Clone(req))
}

// recorded returns the requests received so far.
func (f *fakeBBS) recorded() []proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// lastRequest is the latest request, which must exist.
func (f *fakeBBS) lastRequest(t *testing.T) proto.Message {
	t.Helper()
	reqs := f.recorded()
	require.NotEmpty(t, reqs, "the fake BBS received no request")
	return reqs[len(reqs)-1]
}

type desiredServer struct {
	bbsv1.UnimplementedDesiredLRPServiceServer
	*fakeBBS
}

func (s desiredServer) ListDesiredLRPs(_ context.Context, req *bbsv1.ListDesiredLRPsRequest) (*bbsv1.ListDesiredLRPsResponse, error) {
	s.record(req)
	resp := &bbsv1.ListDesiredLRPsResponse{}
	for _, d := range s.desired {
		if req.GetDomain() == "" || d.GetDomain() == req.GetDomain() {
			resp.DesiredLrps = append(resp.DesiredLrps, d)
		}
	}
	return resp, nil
}

func (s desiredServer) GetDesiredLRP(_ context.Context, req *bbsv1.GetDesiredLRPRequest) (*bbsv1.GetDesiredLRPResponse, error) {
	s.record(req)
	for _, d := range s.desired {
		if d.GetProcessGuid() == req.GetProcessGuid() {
			return &bbsv1.GetDesiredLRPResponse{DesiredLrp: d}, nil
		}
	}
	return nil, models.NewError(models.ErrTypeResourceNotFound, "desired LRP %s not found", req.GetProcessGuid())
}

func (s desiredServer) DesireLRP(_ context.Context, req *bbsv1.DesireLRPRequest) (*bbsv1.DesireLRPResponse, error) {
	s.record(req)
	return &bbsv1.DesireLRPResponse{}, nil
}

func (s desiredServer) UpdateDesiredLRP(_ context.Context, req *bbsv1.UpdateDesiredLRPRequest) (*bbsv1.UpdateDesiredLRPResponse, error) {
	s.record(req)
	return &bbsv1.UpdateDesiredLRPResponse{}, nil
}

func (s desiredServer) RemoveDesiredLRP(_ context.Context, req *bbsv1.RemoveDesiredLRPRequest) (*bbsv1.RemoveDesiredLRPResponse, error) {
	s.record(req)
	return &bbsv1.RemoveDesiredLRPResponse{}, nil
}

type actualServer struct {
	bbsv1.UnimplementedActualLRPServiceServer
	*fakeBBS
}

// ListActualLRPs filters like the BBS and streams the rows two per batch.
func (s actualServer) ListActualLRPs(req *bbsv1.ListActualLRPsRequest, stream grpc.ServerStreamingServer[bbsv1.ListActualLRPsResponse]) error {
	s.record(req)
	var batch []*modelsv1.ActualLRP
	for _, a := range s.actualLRPs() {
		if (req.GetDomain() == "" || a.GetDomain() == req.GetDomain()) &&
			(req.GetCellId() == "" || a.GetCellId() == req.GetCellId()) &&
			(req.GetProcessGuid() == "" || a.GetProcessGuid() == req.GetProcessGuid()) &&
			(req.Index == nil || a.GetIndex() == req.GetIndex()) {
			batch = append(batch, a)
		}
		if len(batch) == 2 {
			if err := stream.Send(&bbsv1.ListActualLRPsResponse{ActualLrps: batch}); err != nil {
				return err
			}
			batch = nil
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return stream.Send(&bbsv1.ListActualLRPsResponse{ActualLrps: batch})
}

func (s actualServer) RetireActualLRP(_ context.Context, req *bbsv1.RetireActualLRPRequest) (*bbsv1.RetireActualLRPResponse, error) {
	s.record(req)
	return &bbsv1.RetireActualLRPResponse{}, nil
}

type taskServer struct {
	bbsv1.UnimplementedTaskServiceServer
	*fakeBBS
}

func (s taskServer) GetTask(_ context.Context, req *bbsv1.GetTaskRequest) (*bbsv1.GetTaskResponse, error) {
	s.record(req)
	for _, task := range s.taskList() {
		if task.GetTaskGuid() == req.GetTaskGuid() {
			s.mu.Lock()
			defer s.mu.Unlock()
			return &bbsv1.GetTaskResponse{Task: proto.Clone(task).(*modelsv1.Task)}, nil
		}
	}
	return nil, models.NewError(models.ErrTypeResourceNotFound, "task %s not found", req.GetTaskGuid())
}

// DesireTask stores the task PENDING.
func (s taskServer) DesireTask(_ context.Context, req *bbsv1.DesireTaskRequest) (*bbsv1.DesireTaskResponse, error) {
	s.record(req)
	if err := models.ValidateRequest(req); err != nil {
		return nil, err
	}
	task := &modelsv1.Task{TaskGuid: req.GetTaskGuid(), Domain: req.GetDomain(), TaskDefinition: req.GetTaskDefinition(), State: modelsv1.TaskState_TASK_STATE_PENDING}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks = append(s.tasks, task)
	return &bbsv1.DesireTaskResponse{}, nil
}

// CancelTask completes a PENDING or RUNNING task as failed.
func (s taskServer) CancelTask(_ context.Context, req *bbsv1.CancelTaskRequest) (*bbsv1.CancelTaskResponse, error) {
	s.record(req)
	return &bbsv1.CancelTaskResponse{}, s.moveTask(req.GetTaskGuid(), models.TaskCanBeCancelled, func(t *modelsv1.Task) {
		t.State, t.Failed, t.FailureReason = modelsv1.TaskState_TASK_STATE_COMPLETED, true, "task was cancelled"
	})
}

// ResolvingTask moves a COMPLETED task to RESOLVING.
func (s taskServer) ResolvingTask(_ context.Context, req *bbsv1.ResolvingTaskRequest) (*bbsv1.ResolvingTaskResponse, error) {
	s.record(req)
	completed := func(st modelsv1.TaskState) bool { return st == modelsv1.TaskState_TASK_STATE_COMPLETED }
	return &bbsv1.ResolvingTaskResponse{}, s.moveTask(req.GetTaskGuid(), completed, func(t *modelsv1.Task) {
		t.State = modelsv1.TaskState_TASK_STATE_RESOLVING
	})
}

// DeleteTask removes a RESOLVING task.
func (s taskServer) DeleteTask(_ context.Context, req *bbsv1.DeleteTaskRequest) (*bbsv1.DeleteTaskResponse, error) {
	s.record(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range s.tasks {
		if t.GetTaskGuid() != req.GetTaskGuid() {
			continue
		}
		if !models.TaskCanBeDeleted(t.GetState()) {
			return nil, models.NewError(models.ErrTypeInvalidStateTransition, "task %s is not resolving", t.GetTaskGuid())
		}
		s.tasks = slices.Delete(s.tasks, i, i+1)
		return &bbsv1.DeleteTaskResponse{}, nil
	}
	return nil, models.NewError(models.ErrTypeResourceNotFound, "task %s not found", req.GetTaskGuid())
}

// moveTask changes the task guid with change when allowed says its state may move.
func (f *fakeBBS) moveTask(guid string, allowed func(modelsv1.TaskState) bool, change func(*modelsv1.Task)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tasks {
		if t.GetTaskGuid() == guid {
			if !allowed(t.GetState()) {
				return models.NewError(models.ErrTypeInvalidStateTransition, "task %s is %s", guid, models.TaskStateName(t.GetState()))
			}
			change(t)
			return nil
		}
	}
	return models.NewError(models.ErrTypeResourceNotFound, "task %s not found", guid)
}

// taskList returns the tasks.
func (f *fakeBBS) taskList() []*modelsv1.Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tasks)
}

func (s taskServer) ListTasks(_ context.Context, req *bbsv1.ListTasksRequest) (*bbsv1.ListTasksResponse, error) {
	s.record(req)
	return &bbsv1.ListTasksResponse{Tasks: s.taskList()}, nil
}

type domainServer struct {
	bbsv1.UnimplementedDomainServiceServer
	*fakeBBS
}

func (s domainServer) ListDomains(_ context.Context, req *bbsv1.ListDomainsRequest) (*bbsv1.ListDomainsResponse, error) {
	s.record(req)
	return &bbsv1.ListDomainsResponse{Domains: s.domains}, nil
}

func (s domainServer) UpsertDomain(_ context.Context, req *bbsv1.UpsertDomainRequest) (*bbsv1.UpsertDomainResponse, error) {
	s.record(req)
	return &bbsv1.UpsertDomainResponse{}, nil
}

type cellServer struct {
	bbsv1.UnimplementedCellServiceServer
	*fakeBBS
}

func (s cellServer) ListCells(_ context.Context, req *bbsv1.ListCellsRequest) (*bbsv1.ListCellsResponse, error) {
	s.record(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &bbsv1.ListCellsResponse{}
	for _, c := range s.cells {
		resp.Cells = append(resp.Cells, proto.Clone(c).(*modelsv1.CellPresence))
	}
	return resp, nil
}

// CordonCell marks a listed cell cordoned.
func (s cellServer) CordonCell(_ context.Context, req *bbsv1.CordonCellRequest) (*bbsv1.CordonCellResponse, error) {
	s.record(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cells {
		if c.GetCellId() == req.GetCellId() {
			c.Cordoned, c.CordonReason = true, req.GetReason()
		}
	}
	return &bbsv1.CordonCellResponse{}, nil
}

// UncordonCell lifts the cordon of a listed cell and says whether it had one.
func (s cellServer) UncordonCell(_ context.Context, req *bbsv1.UncordonCellRequest) (*bbsv1.UncordonCellResponse, error) {
	s.record(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &bbsv1.UncordonCellResponse{}
	for _, c := range s.cells {
		if c.GetCellId() == req.GetCellId() {
			resp.WasCordoned = c.GetCordoned()
			c.Cordoned, c.CordonReason = false, ""
		}
	}
	return resp, nil
}

// setCells replaces the live cells while the fake serves.
func (f *fakeBBS) setCells(cells []*modelsv1.CellPresence) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cells = cells
}

// cellsCopy returns the live cells.
func (f *fakeBBS) cellsCopy() []*modelsv1.CellPresence {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cells)
}

// setActual replaces the ActualLRPs while the fake serves.
func (f *fakeBBS) setActual(actual []*modelsv1.ActualLRP) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actual = actual
}

func (f *fakeBBS) actualLRPs() []*modelsv1.ActualLRP {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.actual
}

type convergenceServer struct {
	bbsv1.UnimplementedConvergenceServiceServer
	*fakeBBS
}

func (s convergenceServer) GetConvergerStatus(_ context.Context, req *bbsv1.GetConvergerStatusRequest) (*bbsv1.GetConvergerStatusResponse, error) {
	s.record(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.converger == nil {
		return &bbsv1.GetConvergerStatusResponse{}, nil
	}
	return s.converger, nil
}

// SetConvergerPaused stores the flag and reason, changed at testNow, like the BBS.
func (s convergenceServer) SetConvergerPaused(_ context.Context, req *bbsv1.SetConvergerPausedRequest) (*bbsv1.SetConvergerPausedResponse, error) {
	s.record(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &bbsv1.GetConvergerStatusResponse{}
	if s.converger != nil {
		st = proto.Clone(s.converger).(*bbsv1.GetConvergerStatusResponse)
	}
	st.Paused, st.PausedReason, st.ChangedAt = req.GetPaused(), req.GetReason(), testNow.UnixNano()
	s.converger = st
	return &bbsv1.SetConvergerPausedResponse{Status: st}, nil
}

type lockServer struct {
	bbsv1.UnimplementedLockServiceServer
	*fakeBBS
}

func (s lockServer) ListLocks(ctx context.Context, req *bbsv1.ListLocksRequest) (*bbsv1.ListLocksResponse, error) {
	s.record(req)
	if s.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &bbsv1.ListLocksResponse{Locks: s.locks}, nil
}

type eventServer struct {
	bbsv1.UnimplementedEventServiceServer
	*fakeBBS
}

func (s eventServer) Subscribe(req *bbsv1.SubscribeRequest, stream grpc.ServerStreamingServer[bbsv1.SubscribeResponse]) error {
	s.record(req)
	if s.subscribe != nil {
		return s.subscribe(req, stream)
	}
	<-stream.Context().Done()
	return nil
}
