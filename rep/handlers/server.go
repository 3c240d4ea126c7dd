package handlers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/executor"
	"drover.dev/lib/logging"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/translate"
)

// Cell is what the handlers report about their cell.
type Cell struct {
	ID                    string
	Zone                  string
	PlacementTags         []string
	OptionalPlacementTags []string
}

// Evacuation is the cell's evacuation state as the handlers use it.
type Evacuation interface {
	Evacuating() bool
	// Start begins the evacuation; already reports whether it had begun before.
	Start() (already bool)
}

// ReasonEvacuating is logged for work refused because the cell evacuates.
const ReasonEvacuating = "cell is evacuating"

// Server implements repv1.RepServiceServer over an executor.
type Server struct {
	repv1.UnimplementedRepServiceServer
	cell   Cell
	exec   executor.Client
	evac   Evacuation
	logger *slog.Logger
	// execBBS enables Exec (WithExec); nil refuses it.
	execBBS ExecBBS
	// execs counts the Exec streams being served (at most MaxConcurrentExecs).
	execs atomic.Int32
	// background tracks work that outlives its request (task cancellation).
	background sync.WaitGroup
	// previous serves logs --previous; nil refuses it (SetPreviousLogs).
	previous PreviousLogs
}

var _ repv1.RepServiceServer = (*Server)(nil)

// New makes the service; evac may be nil (the cell then never evacuates and Evacuate
// is refused).
func New(cell Cell, exec executor.Client, evac Evacuation, logger *slog.Logger) *Server {
	return &Server{cell: cell, exec: exec, evac: evac, logger: logging.OrDiscard(logger)}
}

// evacuating reports whether the cell evacuates.
func (s *Server) evacuating() bool { return s.evac != nil && s.evac.Evacuating() }

// Evacuate starts draining the cell and returns at once (cell.md §2.8).
func (s *Server) Evacuate(context.Context, *repv1.EvacuateRequest) (*repv1.EvacuateResponse, error) {
	if s.evac == nil {
		return nil, status.Error(codes.Unimplemented, "this rep cannot evacuate")
	}
	already := s.evac.Start()
	s.logger.Info("evacuate-requested", "already_evacuating", already)
	return &repv1.EvacuateResponse{AlreadyEvacuating: already}, nil
}

// Register adds the service to srv.
func (s *Server) Register(srv *grpc.Server) { repv1.RegisterRepServiceServer(srv, s) }

// Wait blocks until background work started by requests has finished.
func (s *Server) Wait() { s.background.Wait() }

// State reports the cell's capacity and work (cell.md §2.3); Unavailable while the
// executor's backend is unhealthy.
func (s *Server) State(ctx context.Context, _ *repv1.StateRequest) (*repv1.StateResponse, error) {
	if !s.exec.Healthy(ctx) {
		return nil, status.Error(codes.Unavailable, "executor is unhealthy")
	}
	containers, err := s.exec.List(ctx)
	if err != nil {
		return nil, executorError("list containers", err)
	}
	return translate.State(translate.Cell{
		ID:                    s.cell.ID,
		Zone:                  s.cell.Zone,
		Total:                 s.exec.TotalResources(),
		Remaining:             s.exec.RemainingResources(),
		RootFSProviders:       s.exec.RootFSProviders(),
		PlacementTags:         s.cell.PlacementTags,
		OptionalPlacementTags: s.cell.OptionalPlacementTags,
		Evacuating:            s.evacuating(),
	}, containers), nil
}

// Ping answers with the cell id.
func (s *Server) Ping(context.Context, *repv1.PingRequest) (*repv1.PingResponse, error) {
	return &repv1.PingResponse{CellId: s.cell.ID}, nil
}

// StopLRPInstance stops one instance's container; the harmonizer then reports it.
func (s *Server) StopLRPInstance(ctx context.Context, req *repv1.StopLRPInstanceRequest) (*repv1.StopLRPInstanceResponse, error) {
	if req.GetInstanceGuid() == "" {
		return nil, status.Error(codes.InvalidArgument, "instance_guid is required")
	}
	c, err := s.exec.Get(ctx, req.GetInstanceGuid())
	if err != nil {
		return nil, executorError("get container", err)
	}
	if pg := req.GetProcessGuid(); pg != "" && c.Tags[executor.TagProcessGuid] != pg {
		return nil, status.Errorf(codes.NotFound, "instance %s does not belong to process %s", req.GetInstanceGuid(), pg)
	}
	if err := s.exec.Stop(ctx, req.GetInstanceGuid()); err != nil {
		return nil, executorError("stop container", err)
	}
	s.logger.Info("stopping-lrp-instance", "container_guid", req.GetInstanceGuid(), "process_guid", c.Tags[executor.TagProcessGuid])
	return &repv1.StopLRPInstanceResponse{}, nil
}

// CancelTask answers at once and deletes the task's container in the background; an
// unknown task counts as cancelled.
func (s *Server) CancelTask(_ context.Context, req *repv1.CancelTaskRequest) (*repv1.CancelTaskResponse, error) {
	guid := req.GetTaskGuid()
	if guid == "" {
		return nil, status.Error(codes.InvalidArgument, "task_guid is required")
	}
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		logger := s.logger.With("container_guid", guid)
		if err := s.exec.Delete(context.Background(), guid); err != nil && !errors.Is(err, executor.ErrContainerNotFound) {
			logger.Error("failed-to-cancel-task", "error", err.Error())
			return
		}
		logger.Info("cancelled-task")
	}()
	return &repv1.CancelTaskResponse{}, nil
}

// executorError turns an executor error into a gRPC status.
func executorError(what string, err error) error {
	switch {
	case errors.Is(err, executor.ErrContainerNotFound):
		return status.Errorf(codes.NotFound, "%s: %v", what, err)
	case errors.Is(err, executor.ErrInvalidStateTransition):
		return status.Errorf(codes.FailedPrecondition, "%s: %v", what, err)
	case errors.Is(err, context.Canceled):
		return status.Errorf(codes.Canceled, "%s: %v", what, err)
	case errors.Is(err, context.DeadlineExceeded):
		return status.Errorf(codes.DeadlineExceeded, "%s: %v", what, err)
	default:
		return status.Errorf(codes.Internal, "%s: %v", what, err)
	}
}
