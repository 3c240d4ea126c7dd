package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"drover.dev/auctioneer/auction"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// fakeBBS lists the given cells and records the failures reported to it.
type fakeBBS struct {
	mu        sync.Mutex
	cells     []*modelsv1.CellPresence
	listErrs  []error // returned by the next ListCells calls, in order
	listCalls int
	failed    map[string]string // "guid.index" → placement error
	rejected  map[string]string // task guid → reason
}

func newFakeBBS(cells ...*modelsv1.CellPresence) *fakeBBS {
	return &fakeBBS{cells: cells, failed: map[string]string{}, rejected: map[string]string{}}
}

func (f *fakeBBS) ListCells(context.Context) ([]*modelsv1.CellPresence, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	if len(f.listErrs) > 0 {
		err := f.listErrs[0]
		f.listErrs = f.listErrs[1:]
		return nil, err
	}
	return f.cells, nil
}

func (f *fakeBBS) FailActualLRP(_ context.Context, key *modelsv1.ActualLRPKey, placementError string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed[fmt.Sprintf("%s.%d", key.GetProcessGuid(), key.GetIndex())] = placementError
	return nil
}

func (f *fakeBBS) RejectTask(_ context.Context, taskGuid, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejected[taskGuid] = reason
	return nil
}

func (f *fakeBBS) snapshot() (failed, rejected map[string]string, listCalls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	failed, rejected = map[string]string{}, map[string]string{}
	for k, v := range f.failed {
		failed[k] = v
	}
	for k, v := range f.rejected {
		rejected[k] = v
	}
	return failed, rejected, f.listCalls
}

// fakeRep answers State with state (or stateErr) and records Perform requests.
type fakeRep struct {
	mu         sync.Mutex
	state      *repv1.StateResponse
	stateErr   error
	hang       bool          // State waits for the context to end
	gate       chan struct{} // when set, State waits for it to close
	performErr error
	refuse     func(*repv1.PerformRequest) *repv1.PerformResponse
	performed  []*repv1.PerformRequest
	states     int // State calls
}

// stateCalls is how many times State was called.
func (f *fakeRep) stateCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.states
}

func (f *fakeRep) State(ctx context.Context, _ *repv1.StateRequest, _ ...grpc.CallOption) (*repv1.StateResponse, error) {
	f.mu.Lock()
	f.states++
	gate, hang, state, err := f.gate, f.hang, f.state, f.stateErr
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return state, err
}

func (f *fakeRep) Perform(_ context.Context, req *repv1.PerformRequest, _ ...grpc.CallOption) (*repv1.PerformResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.performed = append(f.performed, req)
	if f.performErr != nil {
		return nil, f.performErr
	}
	if f.refuse != nil {
		return f.refuse(req), nil
	}
	return &repv1.PerformResponse{}, nil
}

func (f *fakeRep) performs() []*repv1.PerformRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*repv1.PerformRequest(nil), f.performed...)
}

// fakeReps maps cell ids to fake reps.
type fakeReps map[string]*fakeRep

func (f fakeReps) Rep(cell *modelsv1.CellPresence) (Rep, error) {
	rep, ok := f[cell.GetCellId()]
	if !ok {
		return nil, errors.New("unknown cell")
	}
	return rep, nil
}

// healthyRep is a rep of a cell with memoryMB of memory, preloaded:busybox and docker.
func healthyRep(cellID, zone string, memoryMB int32) *fakeRep {
	capacity := &modelsv1.CellCapacity{MemoryMb: memoryMB, DiskMb: 10000, Containers: 100}
	return &fakeRep{state: &repv1.StateResponse{
		CellId:             cellID,
		Zone:               zone,
		AvailableResources: capacity,
		TotalResources:     capacity,
		RootfsProviders: []*modelsv1.RootFSProvider{
			{Name: "preloaded", Properties: []string{"busybox"}},
			{Name: "docker"},
		},
	}}
}

func presence(cellID string) *modelsv1.CellPresence {
	return &modelsv1.CellPresence{CellId: cellID, RepAddress: cellID + ":1800", Zone: "z1"}
}

// lrpStart is indices 0..n-1 of an LRP on preloaded:busybox.
func lrpStart(guid string, n int, memoryMB int32) []auction.LRPAuction {
	req := &modelsv1.LRPStartRequest{
		ProcessGuid: guid, Domain: "d", Rootfs: "preloaded:busybox",
		Resource: &modelsv1.Resource{MemoryMb: memoryMB, DiskMb: 1},
	}
	for i := range n {
		req.Indices = append(req.Indices, int32(i))
	}
	return auction.LRPAuctionsFromRequest(req, fakeNow)
}

func taskStart(guid, rootfs string) auction.TaskAuction {
	return auction.TaskAuctionFromRequest(&modelsv1.TaskStartRequest{
		TaskGuid: guid, Domain: "d", Rootfs: rootfs, Resource: &modelsv1.Resource{MemoryMb: 1, DiskMb: 1},
	}, fakeNow)
}

// performedLRPs lists "guid.index" of every LRP sent in the requests.
func performedLRPs(reqs []*repv1.PerformRequest) []string {
	var out []string
	for _, req := range reqs {
		for _, lrp := range req.GetLrps() {
			out = append(out, fmt.Sprintf("%s.%d", lrp.GetProcessGuid(), lrp.GetIndex()))
		}
	}
	return out
}
