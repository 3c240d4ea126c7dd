package httpapi_test

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// calls records the requests a fake received, in order.
type calls struct {
	mu   sync.Mutex
	reqs []any
}

func (c *calls) record(req any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
}

func (c *calls) all() []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]any(nil), c.reqs...)
}

// errorForGUID turns guids like "err-ResourceNotFound" into that BBS error, "grpc-Internal"
// into a bare gRPC status, and anything else into nil.
func errorForGUID(guid string) error {
	if t, ok := strings.CutPrefix(guid, "err-"); ok {
		return models.NewError(models.ErrorType(t), "fake %s", t)
	}
	if name, ok := strings.CutPrefix(guid, "grpc-"); ok {
		for c := codes.OK; c <= codes.Unauthenticated; c++ {
			if c.String() == name {
				return status.Error(c, "bare "+name)
			}
		}
	}
	return nil
}

type fakeDesiredLRPs struct {
	bbsv1.UnimplementedDesiredLRPServiceServer
	calls
	lrps []*modelsv1.DesiredLRP
}

func (f *fakeDesiredLRPs) DesireLRP(_ context.Context, req *bbsv1.DesireLRPRequest) (*bbsv1.DesireLRPResponse, error) {
	f.record(req)
	return &bbsv1.DesireLRPResponse{}, errorForGUID(req.GetDesiredLrp().GetProcessGuid())
}

func (f *fakeDesiredLRPs) UpdateDesiredLRP(_ context.Context, req *bbsv1.UpdateDesiredLRPRequest) (*bbsv1.UpdateDesiredLRPResponse, error) {
	f.record(req)
	return &bbsv1.UpdateDesiredLRPResponse{}, errorForGUID(req.GetProcessGuid())
}

func (f *fakeDesiredLRPs) RemoveDesiredLRP(_ context.Context, req *bbsv1.RemoveDesiredLRPRequest) (*bbsv1.RemoveDesiredLRPResponse, error) {
	f.record(req)
	return &bbsv1.RemoveDesiredLRPResponse{}, errorForGUID(req.GetProcessGuid())
}

func (f *fakeDesiredLRPs) GetDesiredLRP(_ context.Context, req *bbsv1.GetDesiredLRPRequest) (*bbsv1.GetDesiredLRPResponse, error) {
	f.record(req)
	if err := errorForGUID(req.GetProcessGuid()); err != nil {
		return nil, err
	}
	for _, lrp := range f.lrps {
		if lrp.GetProcessGuid() == req.GetProcessGuid() {
			return &bbsv1.GetDesiredLRPResponse{DesiredLrp: lrp}, nil
		}
	}
	return nil, models.ErrResourceNotFound
}

func (f *fakeDesiredLRPs) ListDesiredLRPs(_ context.Context, req *bbsv1.ListDesiredLRPsRequest) (*bbsv1.ListDesiredLRPsResponse, error) {
	f.record(req)
	resp := &bbsv1.ListDesiredLRPsResponse{}
	for _, lrp := range f.lrps {
		if req.GetDomain() == "" || req.GetDomain() == lrp.GetDomain() {
			resp.DesiredLrps = append(resp.DesiredLrps, lrp)
		}
	}
	return resp, nil
}

type fakeActualLRPs struct {
	bbsv1.UnimplementedActualLRPServiceServer
	calls
	// batches are streamed as they are, filtered by process guid and index.
	batches [][]*modelsv1.ActualLRP
}

func (f *fakeActualLRPs) ListActualLRPs(req *bbsv1.ListActualLRPsRequest, stream bbsv1.ActualLRPService_ListActualLRPsServer) error {
	f.record(req)
	if err := errorForGUID(req.GetProcessGuid()); err != nil {
		return err
	}
	for _, batch := range f.batches {
		resp := &bbsv1.ListActualLRPsResponse{}
		for _, lrp := range batch {
			if req.GetProcessGuid() != "" && lrp.GetProcessGuid() != req.GetProcessGuid() {
				continue
			}
			if req.Index != nil && lrp.GetIndex() != req.GetIndex() {
				continue
			}
			resp.ActualLrps = append(resp.ActualLrps, lrp)
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeActualLRPs) RetireActualLRP(_ context.Context, req *bbsv1.RetireActualLRPRequest) (*bbsv1.RetireActualLRPResponse, error) {
	f.record(req)
	return &bbsv1.RetireActualLRPResponse{}, errorForGUID(req.GetActualLrpKey().GetProcessGuid())
}

type fakeTasks struct {
	bbsv1.UnimplementedTaskServiceServer
	calls
	tasks []*modelsv1.Task
}

func (f *fakeTasks) DesireTask(_ context.Context, req *bbsv1.DesireTaskRequest) (*bbsv1.DesireTaskResponse, error) {
	f.record(req)
	return &bbsv1.DesireTaskResponse{}, errorForGUID(req.GetTaskGuid())
}

func (f *fakeTasks) GetTask(_ context.Context, req *bbsv1.GetTaskRequest) (*bbsv1.GetTaskResponse, error) {
	f.record(req)
	if err := errorForGUID(req.GetTaskGuid()); err != nil {
		return nil, err
	}
	for _, task := range f.tasks {
		if task.GetTaskGuid() == req.GetTaskGuid() {
			return &bbsv1.GetTaskResponse{Task: task}, nil
		}
	}
	return nil, models.ErrResourceNotFound
}

func (f *fakeTasks) ListTasks(_ context.Context, req *bbsv1.ListTasksRequest) (*bbsv1.ListTasksResponse, error) {
	f.record(req)
	return &bbsv1.ListTasksResponse{Tasks: f.tasks}, nil
}

func (f *fakeTasks) CancelTask(_ context.Context, req *bbsv1.CancelTaskRequest) (*bbsv1.CancelTaskResponse, error) {
	f.record(req)
	return &bbsv1.CancelTaskResponse{}, errorForGUID(req.GetTaskGuid())
}

func (f *fakeTasks) ResolvingTask(_ context.Context, req *bbsv1.ResolvingTaskRequest) (*bbsv1.ResolvingTaskResponse, error) {
	f.record(req)
	for _, task := range f.tasks {
		if task.GetTaskGuid() == req.GetTaskGuid() && task.GetState() != modelsv1.TaskState_TASK_STATE_COMPLETED {
			return nil, models.ErrInvalidStateTransition
		}
	}
	return &bbsv1.ResolvingTaskResponse{}, nil
}

func (f *fakeTasks) DeleteTask(_ context.Context, req *bbsv1.DeleteTaskRequest) (*bbsv1.DeleteTaskResponse, error) {
	f.record(req)
	return &bbsv1.DeleteTaskResponse{}, nil
}

type fakeDomains struct {
	bbsv1.UnimplementedDomainServiceServer
	calls
	domains []string
}

func (f *fakeDomains) UpsertDomain(_ context.Context, req *bbsv1.UpsertDomainRequest) (*bbsv1.UpsertDomainResponse, error) {
	f.record(req)
	return &bbsv1.UpsertDomainResponse{}, errorForGUID(req.GetDomain())
}

func (f *fakeDomains) ListDomains(_ context.Context, req *bbsv1.ListDomainsRequest) (*bbsv1.ListDomainsResponse, error) {
	f.record(req)
	return &bbsv1.ListDomainsResponse{Domains: f.domains}, nil
}

type fakeCells struct {
	bbsv1.UnimplementedCellServiceServer
	calls
	cells []*modelsv1.CellPresence
}

func (f *fakeCells) ListCells(context.Context, *bbsv1.ListCellsRequest) (*bbsv1.ListCellsResponse, error) {
	return &bbsv1.ListCellsResponse{Cells: f.cells}, nil
}
