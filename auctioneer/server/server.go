// Package server is the auctioneer's gRPC transport: it validates each requested item,
// drops invalid ones with a log line, queues the rest and answers at once.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/auctioneer/auction"
	"drover.dev/lib/logging"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Queue takes the work to auction (runner.Batch).
type Queue interface {
	AddLRPs(lrps []auction.LRPAuction)
	AddTasks(tasks []auction.TaskAuction)
}

// Server implements drover.auctioneer.v1.AuctioneerService.
type Server struct {
	auctioneerv1.UnimplementedAuctioneerServiceServer
	queue  Queue
	log    *slog.Logger
	now    func() time.Time
	active atomic.Bool
}

// New returns a server that queues valid work on queue. It refuses requests with
// Unavailable until Activate is called (only the lock holder auctions).
func New(queue Queue, logger *slog.Logger) *Server {
	return &Server{queue: queue, log: logging.OrDiscard(logger), now: time.Now}
}

// Activate lets requests through: call it once the auctioneer lock is held.
func (s *Server) Activate() { s.active.Store(true) }

// Deactivate refuses requests again (on shutdown, or when the lock is given up).
func (s *Server) Deactivate() { s.active.Store(false) }

// Register adds the service to a gRPC server.
func (s *Server) Register(srv *grpc.Server) { auctioneerv1.RegisterAuctioneerServiceServer(srv, s) }

// errNotActive answers requests that reach an auctioneer not holding the lock.
var errNotActive = status.Error(codes.Unavailable, "this auctioneer does not hold the auctioneer lock")

// RequestLRPAuctions queues every valid index of every request; invalid requests are
// logged and dropped, and the call still succeeds.
func (s *Server) RequestLRPAuctions(_ context.Context, req *auctioneerv1.RequestLRPAuctionsRequest) (*auctioneerv1.RequestLRPAuctionsResponse, error) {
	if !s.active.Load() {
		return nil, errNotActive
	}
	now := s.now()
	var lrps []auction.LRPAuction
	for i, start := range req.GetRequests() {
		if err := ValidateLRPStart(start); err != nil {
			s.log.Error("invalid-lrp-start-request", "item", i, "process_guid", start.GetProcessGuid(), "error", err.Error())
			continue
		}
		lrps = append(lrps, auction.LRPAuctionsFromRequest(start, now)...)
	}
	s.queue.AddLRPs(lrps)
	s.log.Debug("lrp-auctions-requested", "instances", len(lrps))
	return &auctioneerv1.RequestLRPAuctionsResponse{}, nil
}

// RequestTaskAuctions queues every valid task; invalid ones are logged and dropped, and
// the call still succeeds.
func (s *Server) RequestTaskAuctions(_ context.Context, req *auctioneerv1.RequestTaskAuctionsRequest) (*auctioneerv1.RequestTaskAuctionsResponse, error) {
	if !s.active.Load() {
		return nil, errNotActive
	}
	now := s.now()
	var tasks []auction.TaskAuction
	for i, start := range req.GetRequests() {
		if err := ValidateTaskStart(start); err != nil {
			s.log.Error("invalid-task-start-request", "item", i, "task_guid", start.GetTaskGuid(), "error", err.Error())
			continue
		}
		tasks = append(tasks, auction.TaskAuctionFromRequest(start, now))
	}
	s.queue.AddTasks(tasks)
	s.log.Debug("task-auctions-requested", "tasks", len(tasks))
	return &auctioneerv1.RequestTaskAuctionsResponse{}, nil
}

// ValidateLRPStart checks an LRP start request as upstream does: process_guid, domain,
// indices and rootfs present, indices and resources not negative.
func ValidateLRPStart(req *modelsv1.LRPStartRequest) error {
	var errs []error
	if req.GetProcessGuid() == "" {
		errs = append(errs, errors.New("process_guid: must not be empty"))
	}
	if req.GetDomain() == "" {
		errs = append(errs, errors.New("domain: must not be empty"))
	}
	if len(req.GetIndices()) == 0 {
		errs = append(errs, errors.New("indices: must not be empty"))
	}
	for _, index := range req.GetIndices() {
		if index < 0 {
			errs = append(errs, fmt.Errorf("indices: must not be negative, got %d", index))
			break
		}
	}
	errs = append(errs, validateResource(req.GetResource()), validateRootFS(req.GetRootfs()))
	return errors.Join(errs...)
}

// ValidateTaskStart checks a task start request as upstream does: task_guid and rootfs
// present, resources not negative.
func ValidateTaskStart(req *modelsv1.TaskStartRequest) error {
	var errs []error
	if req.GetTaskGuid() == "" {
		errs = append(errs, errors.New("task_guid: must not be empty"))
	}
	errs = append(errs, validateResource(req.GetResource()), validateRootFS(req.GetRootfs()))
	return errors.Join(errs...)
}

func validateResource(r *modelsv1.Resource) error {
	var errs []error
	for _, field := range []struct {
		name  string
		value int32
	}{{"resource.memory_mb", r.GetMemoryMb()}, {"resource.disk_mb", r.GetDiskMb()}, {"resource.max_pids", r.GetMaxPids()}} {
		if field.value < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %d", field.name, field.value))
		}
	}
	return errors.Join(errs...)
}

func validateRootFS(rootfs string) error {
	if rootfs == "" {
		return errors.New("rootfs: must not be empty")
	}
	return nil
}
