package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/lifecycle/result"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	"drover.dev/stager/callback"
	"drover.dev/stager/metrics"
	"drover.dev/stager/staging"
	"drover.dev/stager/store"
)

// keptLines is how many of the task's log lines a staging keeps to explain a failure.
const keptLines = 200

// Stage validates the request, checks the stack is served and resolves the buildpacks
// before any task exists, then desires the staging task and streams: started, the
// task's log lines, then one result or failure. A client that goes away, or a staging
// over staging_timeout, cancels and deletes the task.
func (s *Server) Stage(req *stagerv1.StageRequest, stream grpc.ServerStreamingServer[stagerv1.StageResponse]) error {
	ctx := stream.Context()
	if err := staging.Validate(req); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	stackName := req.GetStack()
	if stackName == "" {
		stackName = s.cfg.DefaultStack
	}
	stack, known := s.cfg.Stack(stackName)
	cells, err := s.cells(ctx)
	if err != nil {
		return err
	}
	if !known || len(servingCells(cells, stack)) == 0 {
		return noCell(stackName, known, s.cfg.StackNames())
	}
	registered, err := s.opts.Store.List(ctx, stack.Name)
	if err != nil {
		return s.internal("list-buildpacks", err)
	}
	bps, skipDetect, err := staging.Resolve(req.GetBuildpacks(), stagingBuildpacks(registered), stack.Name)
	if err != nil {
		if skipDetect {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	random := make([]byte, 8)
	if _, err := io.ReadFull(s.opts.Random, random); err != nil {
		return s.internal("task-guid", err)
	}
	plan := staging.Plan{
		TaskGUID: staging.TaskGUID(req.GetAppGuid(), random), Request: req, Stack: stack, Buildpacks: bps, SkipDetect: skipDetect,
		LifecyclePath: s.cfg.LifecyclePath, CallbackURL: s.cfg.CallbackURL, EgressRules: s.cfg.StagingEgressRules,
		MemoryMB: s.cfg.StagingMemoryMB, DiskMB: s.cfg.StagingDiskMB, UploadTTL: s.cfg.StagingTimeout.Duration() + UploadTTL,
	}
	r := &run{s: s, plan: plan, stream: stream, logger: s.logger.With("task_guid", plan.TaskGUID, "app_guid", req.GetAppGuid(), "stack", stack.Name)}
	return r.stage(ctx)
}

// stagingBuildpacks strips the store's timestamps.
func stagingBuildpacks(bps []store.Buildpack) []staging.Buildpack {
	out := make([]staging.Buildpack, len(bps))
	for i, b := range bps {
		out[i] = b.Buildpack
	}
	return out
}

// run is one staging in progress.
type run struct {
	s      *Server
	plan   staging.Plan
	stream grpc.ServerStreamingServer[stagerv1.StageResponse]
	logger *slog.Logger

	mu     sync.Mutex
	cellID string
	lines  []string
}

func (r *run) setCell(id string) {
	r.mu.Lock()
	r.cellID = id
	r.mu.Unlock()
}

func (r *run) cell() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cellID
}

// stage desires the task and follows it to its end.
func (r *run) stage(ctx context.Context) error {
	s, guid := r.s, r.plan.TaskGUID
	completed, done := s.opts.Registry.Wait(guid)
	defer done()
	ended := s.opts.Metrics.Started()
	start := time.Now()
	def := staging.TaskDefinition(r.plan, s.opts.Files)
	if _, err := s.opts.BBS.DesireTask(ctx, &bbsv1.DesireTaskRequest{TaskGuid: guid, Domain: staging.Domain, TaskDefinition: def}); err != nil {
		ended(metrics.Failed)
		st := status.Convert(err)
		return status.Errorf(st.Code(), "desiring the staging task: %s", st.Message())
	}
	r.logger.Info("staging-task-desired", "buildpacks", staging.Names(r.plan.Buildpacks), "skip_detect", r.plan.SkipDetect)

	stageCtx, cancel := context.WithTimeout(ctx, s.cfg.StagingTimeout.Duration())
	defer cancel()
	if err := r.stream.Send(&stagerv1.StageResponse{Event: &stagerv1.StageResponse_Started{Started: &stagerv1.StagingStarted{
		TaskGuid: guid, Stack: r.plan.Stack.Name, Buildpacks: staging.Names(r.plan.Buildpacks)}}}); err != nil {
		return r.abandon(err, ended, metrics.Cancelled)
	}
	followCtx, stopFollowing := context.WithCancel(stageCtx)
	defer stopFollowing()
	logs := make(chan *repv1.LogLine, 256)
	go r.follow(followCtx, logs)

	var c callback.Completion
wait:
	for {
		select {
		case line, ok := <-logs:
			if !ok {
				logs = nil
				continue
			}
			if err := r.forward(line); err != nil {
				return r.abandon(err, ended, metrics.Cancelled)
			}
		case c = <-completed:
			break wait
		case <-stageCtx.Done():
			if ctx.Err() != nil {
				return r.abandon(ctx.Err(), ended, metrics.Cancelled)
			}
			err := fmt.Errorf("staging timed out after %s", s.cfg.StagingTimeout.Duration())
			r.cleanup()
			ended(metrics.Failed)
			return r.send(&stagerv1.StageResponse{Event: &stagerv1.StageResponse_Failure{Failure: &stagerv1.StagingFailure{
				TaskGuid: guid, Reason: err.Error(), LastLines: r.lastLines(), CellId: r.cell()}}})
		}
	}
	duration := time.Since(start)
	r.drain(logs)
	stopFollowing()
	final, outcome := r.final(c, duration)
	r.logger.Info("staging-completed", "outcome", outcome, "duration", duration.String(), "cell_id", r.cell())
	ended(outcome)
	return r.send(final)
}

// drain forwards the log lines that still arrive, until the stream ends or the drain
// timeout passes.
func (r *run) drain(logs <-chan *repv1.LogLine) {
	if logs == nil {
		return
	}
	timer := time.NewTimer(r.s.opts.DrainTimeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-logs:
			if !ok {
				return
			}
			if r.forward(line) != nil {
				return
			}
		case <-timer.C:
			return
		}
	}
}

// final is the result or failure event of a completed task, and its outcome.
func (r *run) final(c callback.Completion, duration time.Duration) (*stagerv1.StageResponse, string) {
	guid := r.plan.TaskGUID
	fail := func(reason string, last []string) (*stagerv1.StageResponse, string) {
		return &stagerv1.StageResponse{Event: &stagerv1.StageResponse_Failure{Failure: &stagerv1.StagingFailure{
			TaskGuid: guid, Reason: reason, LastLines: last, CellId: r.cell()}}}, metrics.Failed
	}
	r.mu.Lock()
	lines := append([]string(nil), r.lines...)
	r.mu.Unlock()
	if c.Failed {
		reason, last := staging.Failure(c.FailureReason, lines, r.plan.Stack.Name)
		return fail(reason, last)
	}
	res, err := result.Parse([]byte(c.Result))
	if err != nil {
		_, last := staging.Failure("", lines, r.plan.Stack.Name)
		return fail(err.Error(), last)
	}
	return &stagerv1.StageResponse{Event: &stagerv1.StageResponse_Result{Result: &stagerv1.StagingResult{
		TaskGuid: guid, DropletKey: r.plan.DropletKey(), DropletSha256: res.DropletSHA256, DropletSize: res.DropletSize,
		Buildpack: res.Buildpack, Buildpacks: res.Buildpacks, DetectOutput: res.DetectOutput, StartCommand: res.StartCommand,
		ProcessTypes: res.ProcessTypes, Stack: r.plan.Stack.Name, Rootfs: r.plan.Stack.RootFS, User: r.plan.Stack.User,
		LifecycleUrl: r.s.opts.Files.StaticURL(r.plan.LifecyclePath), CellId: r.cell(), DurationMs: duration.Milliseconds(),
	}}}, metrics.Succeeded
}

// forward keeps a log line's text and sends it to the client.
func (r *run) forward(line *repv1.LogLine) error {
	r.mu.Lock()
	r.lines = append(r.lines, line.GetText())
	if len(r.lines) > keptLines {
		r.lines = append(r.lines[:0], r.lines[len(r.lines)-keptLines:]...)
	}
	r.mu.Unlock()
	return r.stream.Send(&stagerv1.StageResponse{Event: &stagerv1.StageResponse_Log{Log: line}})
}

func (r *run) lastLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, last := staging.Failure("", r.lines, "")
	return last
}

func (r *run) send(ev *stagerv1.StageResponse) error {
	if err := r.stream.Send(ev); err != nil {
		r.logger.Info("staging-client-gone", "error", err.Error())
		return err
	}
	return nil
}

// abandon cancels and deletes the task of a staging whose client went away.
func (r *run) abandon(cause error, ended func(string), outcome string) error {
	r.logger.Info("staging-abandoned", "reason", cause.Error())
	r.cleanup()
	ended(outcome)
	if st, ok := status.FromError(cause); ok && st.Code() != codes.Unknown {
		return cause
	}
	return status.Error(codes.Canceled, "staging cancelled: "+cause.Error())
}

// cleanup cancels the task, then resolves and deletes it, so that no task is left; the
// BBS may race to resolve it for its callback, in which case it deletes it itself.
func (r *run) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), r.s.opts.CleanupTimeout)
	defer cancel()
	guid := r.plan.TaskGUID
	bbs := r.s.opts.BBS
	if _, err := bbs.CancelTask(ctx, &bbsv1.CancelTaskRequest{TaskGuid: guid}); err != nil {
		r.logger.Info("cancel-staging-task-failed", "error", err.Error())
	}
	if _, err := bbs.ResolvingTask(ctx, &bbsv1.ResolvingTaskRequest{TaskGuid: guid}); err != nil {
		r.logger.Info("resolve-staging-task-failed", "error", err.Error())
	}
	if _, err := bbs.DeleteTask(ctx, &bbsv1.DeleteTaskRequest{TaskGuid: guid}); err != nil {
		r.logger.Info("delete-staging-task-failed", "error", err.Error())
		return
	}
	r.logger.Info("staging-task-deleted")
}

// follow finds the task's cell (GetTask every poll interval) and streams its logs from
// the cell's rep into out, reconnecting while the container is not there yet; it
// closes out when the stream ends or ctx does.
func (r *run) follow(ctx context.Context, out chan<- *repv1.LogLine) {
	defer close(out)
	s := r.s
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
			return true
		}
	}
	var rep repv1.RepServiceClient
	for rep == nil {
		resp, err := s.opts.BBS.GetTask(ctx, &bbsv1.GetTaskRequest{TaskGuid: r.plan.TaskGUID})
		if id := resp.GetTask().GetCellId(); err == nil && id != "" {
			r.setCell(id)
			rep = r.repOf(ctx, id)
		}
		if rep == nil && !wait() {
			return
		}
	}
	sent := 0
	for {
		stream, err := rep.StreamLogs(ctx, &repv1.StreamLogsRequest{TaskGuid: r.plan.TaskGUID, Follow: true})
		if err == nil {
			n := 0
			for {
				var resp *repv1.StreamLogsResponse
				resp, err = stream.Recv()
				if err != nil {
					break
				}
				for _, line := range resp.GetLines() {
					if n++; n <= sent {
						continue
					}
					sent = n
					select {
					case out <- line:
					case <-ctx.Done():
						return
					}
				}
			}
		}
		if errors.Is(err, io.EOF) || !wait() {
			return
		}
	}
}

// repOf is a client of the rep of the cell called id (nil while it is not listed).
func (r *run) repOf(ctx context.Context, id string) repv1.RepServiceClient {
	cells, err := r.s.cells(ctx)
	if err != nil {
		return nil
	}
	for _, c := range cells {
		if c.GetCellId() == id {
			rep, err := r.s.opts.Reps.For(c)
			if err != nil {
				r.logger.Info("rep-client-failed", "cell_id", id, "error", err.Error())
				return nil
			}
			return rep
		}
	}
	return nil
}
