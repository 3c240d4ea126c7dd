package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/auctioneer/auction"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

type recordingQueue struct {
	lrps  []auction.LRPAuction
	tasks []auction.TaskAuction
}

func (q *recordingQueue) AddLRPs(lrps []auction.LRPAuction)    { q.lrps = append(q.lrps, lrps...) }
func (q *recordingQueue) AddTasks(tasks []auction.TaskAuction) { q.tasks = append(q.tasks, tasks...) }

func validLRP() *modelsv1.LRPStartRequest {
	return &modelsv1.LRPStartRequest{
		ProcessGuid: "web", Domain: "apps", Indices: []int32{0, 1}, Rootfs: "preloaded:busybox",
		Resource: &modelsv1.Resource{MemoryMb: 64, DiskMb: 128, MaxPids: 100},
	}
}

func validTask() *modelsv1.TaskStartRequest {
	return &modelsv1.TaskStartRequest{TaskGuid: "t", Domain: "tasks", Rootfs: "docker:///busybox", Resource: &modelsv1.Resource{MemoryMb: 1}}
}

func TestValidateLRPStart(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*modelsv1.LRPStartRequest)
		want   string
	}{
		{"valid", func(*modelsv1.LRPStartRequest) {}, ""},
		{"no resource at all is zero", func(r *modelsv1.LRPStartRequest) { r.Resource = nil }, ""},
		{"process guid", func(r *modelsv1.LRPStartRequest) { r.ProcessGuid = "" }, "process_guid: must not be empty"},
		{"domain", func(r *modelsv1.LRPStartRequest) { r.Domain = "" }, "domain: must not be empty"},
		{"indices", func(r *modelsv1.LRPStartRequest) { r.Indices = nil }, "indices: must not be empty"},
		{"negative index", func(r *modelsv1.LRPStartRequest) { r.Indices = []int32{0, -1} }, "indices: must not be negative, got -1"},
		{"memory", func(r *modelsv1.LRPStartRequest) { r.Resource.MemoryMb = -1 }, "resource.memory_mb: must not be negative, got -1"},
		{"disk", func(r *modelsv1.LRPStartRequest) { r.Resource.DiskMb = -2 }, "resource.disk_mb: must not be negative, got -2"},
		{"max pids", func(r *modelsv1.LRPStartRequest) { r.Resource.MaxPids = -3 }, "resource.max_pids: must not be negative, got -3"},
		{"rootfs", func(r *modelsv1.LRPStartRequest) { r.Rootfs = "" }, "rootfs: must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validLRP()
			tt.mutate(req)
			err := ValidateLRPStart(req)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestValidateTaskStart(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*modelsv1.TaskStartRequest)
		want   string
	}{
		{"valid", func(*modelsv1.TaskStartRequest) {}, ""},
		{"task guid", func(r *modelsv1.TaskStartRequest) { r.TaskGuid = "" }, "task_guid: must not be empty"},
		{"memory", func(r *modelsv1.TaskStartRequest) { r.Resource.MemoryMb = -1 }, "resource.memory_mb: must not be negative, got -1"},
		{"rootfs", func(r *modelsv1.TaskStartRequest) { r.Rootfs = "" }, "rootfs: must not be empty"},
		{"several problems", func(r *modelsv1.TaskStartRequest) { r.TaskGuid, r.Rootfs = "", "" }, "task_guid: must not be empty\nrootfs: must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validTask()
			tt.mutate(req)
			err := ValidateTaskStart(req)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestRequestsQueueValidItemsAndDropInvalidOnes(t *testing.T) {
	queue := &recordingQueue{}
	s := New(queue, nil)
	s.Activate()
	invalid := validLRP()
	invalid.Domain = ""
	_, err := s.RequestLRPAuctions(context.Background(), &auctioneerv1.RequestLRPAuctionsRequest{
		Requests: []*modelsv1.LRPStartRequest{validLRP(), invalid},
	})
	require.NoError(t, err)
	require.Len(t, queue.lrps, 2, "one auction per index of the valid request")
	require.Equal(t, auction.LRPKey{ProcessGuid: "web", Index: 1}, queue.lrps[1].Key())
	require.Equal(t, 64, queue.lrps[0].Resource.MemoryMB)
	require.False(t, queue.lrps[0].QueuedAt.IsZero())

	badTask := validTask()
	badTask.TaskGuid = ""
	_, err = s.RequestTaskAuctions(context.Background(), &auctioneerv1.RequestTaskAuctionsRequest{
		Requests: []*modelsv1.TaskStartRequest{badTask, validTask()},
	})
	require.NoError(t, err)
	require.Len(t, queue.tasks, 1)
	require.Equal(t, "docker:///busybox", queue.tasks[0].Constraint.RootFS)
}

func TestRequestsRefusedUntilActive(t *testing.T) {
	queue := &recordingQueue{}
	s := New(queue, nil)
	_, err := s.RequestLRPAuctions(context.Background(), &auctioneerv1.RequestLRPAuctionsRequest{Requests: []*modelsv1.LRPStartRequest{validLRP()}})
	require.Equal(t, codes.Unavailable, status.Code(err))
	_, err = s.RequestTaskAuctions(context.Background(), &auctioneerv1.RequestTaskAuctionsRequest{Requests: []*modelsv1.TaskStartRequest{validTask()}})
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Empty(t, queue.lrps)
	require.Empty(t, queue.tasks)
}
