package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/client"
	"drover.dev/bbs/models"
	"drover.dev/executor"
	"drover.dev/lib/authz"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// execKillTimeout bounds the kill of an exec whose client went away.
const execKillTimeout = time.Minute

// ExecBBS is what Exec asks the BBS: whether the LRP allows exec, and to record it.
type ExecBBS interface {
	DesiredLRP(ctx context.Context, processGuid string) (*modelsv1.DesiredLRP, error)
	RecordExec(ctx context.Context, req *bbsv1.RecordExecRequest) error
}

// GRPCExecBBS is ExecBBS over the BBS's gRPC client.
type GRPCExecBBS struct{ Client *client.Client }

// DesiredLRP fetches a DesiredLRP (placed on this cell).
func (b GRPCExecBBS) DesiredLRP(ctx context.Context, processGuid string) (*modelsv1.DesiredLRP, error) {
	resp, err := b.Client.GetDesiredLRP(ctx, &bbsv1.GetDesiredLRPRequest{ProcessGuid: processGuid})
	if err != nil {
		return nil, err
	}
	return resp.GetDesiredLrp(), nil
}

// RecordExec records an exec as an event.
func (b GRPCExecBBS) RecordExec(ctx context.Context, req *bbsv1.RecordExecRequest) error {
	_, err := b.Client.RecordExec(ctx, req)
	return err
}

// WithExec enables Exec, which asks bbs whether an LRP allows it and records each one;
// without it Exec is Unimplemented.
func (s *Server) WithExec(bbs ExecBBS) *Server {
	s.execBBS = bbs
	return s
}

// Exec runs an operator's process inside a running instance of this cell (droverctl
// exec): the first message names the instance and the command, later ones carry input
// and terminal resizes; output and finally the exit status flow back. Only an operator
// may call it, only for an LRP whose allow_ssh is set; every exec is recorded in the
// BBS and logged, and the process is killed when the stream ends before it does.
func (s *Server) Exec(stream repv1.RepService_ExecServer) error {
	if s.execBBS == nil {
		return status.Error(codes.Unimplemented, "this rep does not run exec")
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	id, ok := authz.FromContext(ctx)
	if !ok || id.Role != authz.RoleOperator {
		return status.Errorf(codes.PermissionDenied, "%s may not exec: operators only", id)
	}
	if n := s.execs.Add(1); n > MaxConcurrentExecs {
		s.execs.Add(-1)
		return status.Errorf(codes.ResourceExhausted, "cell %s already runs %d execs, the most it serves at once", s.cell.ID, MaxConcurrentExecs)
	}
	defer s.execs.Add(-1)
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return status.Error(codes.InvalidArgument, "the first message must be start; the stream ended")
	}
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "the first message must be start")
	}
	if msg := ValidateExecStart(start); msg != "" {
		return status.Error(codes.InvalidArgument, msg)
	}
	c, err := s.execTarget(ctx, start)
	if err != nil {
		return err
	}
	instance := &modelsv1.ActualLRPInstanceKey{InstanceGuid: c.Guid, CellId: s.cell.ID}
	key := &modelsv1.ActualLRPKey{ProcessGuid: start.GetProcessGuid(), Index: start.GetIndex(), Domain: c.Tags[executor.TagDomain]}
	if err := s.execBBS.RecordExec(ctx, &bbsv1.RecordExecRequest{
		ActualLrpKey: key, ActualLrpInstanceKey: instance, User: id.CommonName, Args: start.GetArgs(), Tty: start.GetTty(),
	}); err != nil {
		return bbsStatus("record the exec", err)
	}
	logger := s.logger.With("identity", id.CommonName, "args", start.GetArgs(), "tty", start.GetTty(),
		"process_guid", key.GetProcessGuid(), "index", key.GetIndex(), "instance_guid", c.Guid)
	logger.Info("exec-started")

	stdinR, stdinW := io.Pipe()
	defer stdinR.Close()
	out := &execSender{stream: stream}
	spec := ExecSpec(start, c.RunInfo)
	spec.Stdin = stdinR
	spec.Stdout = out.writer(func(b []byte) *repv1.ExecResponse {
		return &repv1.ExecResponse{Payload: &repv1.ExecResponse_Stdout{Stdout: b}}
	})
	if !spec.TTY {
		spec.Stderr = out.writer(func(b []byte) *repv1.ExecResponse {
			return &repv1.ExecResponse{Payload: &repv1.ExecResponse_Stderr{Stderr: b}}
		})
	}
	proc, err := s.exec.ExecInteractive(ctx, c.Guid, spec)
	if err != nil {
		logger.Info("exec-failed", "error", err.Error())
		return executorError("exec", err)
	}
	recvErr := make(chan error, 1)
	go func() {
		// A bad message ends the exec before the process's input is closed, so that the
		// process cannot end first and hide the error.
		if err := s.execInput(ctx, stream, proc, stdinW); err != nil {
			recvErr <- err
			cancel()
		}
		stdinW.Close()
	}()

	exit, waitErr := proc.Wait(ctx)
	if waitErr != nil {
		// The client went away (or the input was bad): nothing may outlive it.
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), execKillTimeout)
		defer kcancel()
		if err := proc.Kill(kctx); err != nil {
			logger.Error("exec-kill-failed", "error", err.Error())
		}
	}
	// A protocol error is reported before the input is closed: the process may have
	// ended since, but the client hears about its mistake, not an exit status.
	select {
	case err := <-recvErr:
		if status.Code(err) == codes.InvalidArgument {
			logger.Info("exec-ended", "reason", err.Error())
			return err
		}
	default:
	}
	if waitErr != nil {
		logger.Info("exec-ended", "reason", "client went away")
		return status.FromContextError(waitErr).Err()
	}
	logger.Info("exec-ended", "exit_status", exit.Code)
	return out.send(&repv1.ExecResponse{Payload: &repv1.ExecResponse_ExitStatus{ExitStatus: int32(exit.Code)}})
}

// execTarget finds the running instance start names and checks its LRP allows exec.
func (s *Server) execTarget(ctx context.Context, start *repv1.ExecStart) (executor.Container, error) {
	containers, err := s.exec.List(ctx)
	if err != nil {
		return executor.Container{}, executorError("list containers", err)
	}
	c, found := SelectExecContainer(start, containers)
	which := fmt.Sprintf("process %s index %d", start.GetProcessGuid(), start.GetIndex())
	if start.GetInstanceGuid() != "" {
		which += " instance " + start.GetInstanceGuid()
	}
	if !found {
		return c, status.Errorf(codes.NotFound, "no instance of %s on cell %s", which, s.cell.ID)
	}
	if c.State != executor.StateRunning {
		return c, status.Errorf(codes.FailedPrecondition, "the instance of %s is %s, not running", which, c.State)
	}
	desired, err := s.execBBS.DesiredLRP(ctx, start.GetProcessGuid())
	if err != nil {
		return c, bbsStatus("fetch the desired LRP", err)
	}
	if !desired.GetAllowSsh() {
		return c, status.Errorf(codes.FailedPrecondition, "process %s does not allow exec: its allow_ssh is false (droverctl enable-ssh)", start.GetProcessGuid())
	}
	return c, nil
}

// execInput feeds the process from the client's messages until the client ends its
// side or ctx ends (the caller then closes the input). A message that breaks the
// protocol is returned as an InvalidArgument error.
func (s *Server) execInput(ctx context.Context, stream repv1.RepService_ExecServer, proc executor.InteractiveProcess, stdin *io.PipeWriter) error {
	closedByClient := false // close_stdin came: more input is a protocol error
	readerGone := false     // the process stopped reading: more input is dropped
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch p := req.GetPayload().(type) {
		case *repv1.ExecRequest_Stdin:
			if len(p.Stdin) > MaxExecStdinChunk {
				return badInput("stdin: at most %d bytes per message (got %d)", MaxExecStdinChunk, len(p.Stdin))
			}
			if closedByClient {
				return badInput("stdin: sent after close_stdin")
			}
			if !readerGone {
				if _, err := stdin.Write(p.Stdin); err != nil {
					readerGone = true
				}
			}
		case *repv1.ExecRequest_Resize:
			if msg := validateSize(p.Resize); msg != "" {
				return badInput("resize: %s", msg)
			}
			if err := proc.Resize(ctx, terminalSize(p.Resize)); err != nil {
				s.logger.Debug("exec-resize-failed", "error", err.Error())
			}
		case *repv1.ExecRequest_CloseStdin:
			closedByClient = true
			stdin.Close()
		case *repv1.ExecRequest_Start:
			return badInput("start: only the first message may be start")
		default:
			return badInput("payload: empty message")
		}
	}
}

// badInput is the error of a message that breaks the protocol: it goes back to the
// client as InvalidArgument and the process is killed.
func badInput(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// execSender serialises the sends of the output writers and the exit status.
type execSender struct {
	mu     sync.Mutex
	stream repv1.RepService_ExecServer
}

func (e *execSender) send(resp *repv1.ExecResponse) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stream.Send(resp)
}

// writer is an io.Writer sending each write as one response made by wrap.
func (e *execSender) writer(wrap func([]byte) *repv1.ExecResponse) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		for rest := b; len(rest) > 0; {
			n := min(len(rest), MaxExecStdinChunk)
			if err := e.send(wrap(rest[:n])); err != nil {
				return 0, err
			}
			rest = rest[n:]
		}
		return len(b), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// bbsStatus turns a BBS error into the caller's status.
func bbsStatus(what string, err error) error {
	switch models.FromError(err).Type {
	case models.ErrTypeResourceNotFound:
		return status.Errorf(codes.NotFound, "%s: %v", what, err)
	case models.ErrTypeUnauthorized:
		return status.Errorf(codes.PermissionDenied, "%s: %v", what, err)
	default:
		return status.Errorf(codes.Unavailable, "%s: %v", what, err)
	}
}
