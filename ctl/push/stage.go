package push

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// noCompatibleCell starts the auctioneer's failure reason for a task no cell can run.
const noCompatibleCell = "found no compatible cell for required rootfs"

// logDrainTimeout bounds how long a completed task's log stream may still deliver
// lines before it is cut.
const logDrainTimeout = 3 * time.Second

// stage runs the staging task, streaming its logs, and returns the builder's result.
// The task is resolved and deleted whatever happens.
func (p *pusher) stage(ctx context.Context, app App) (StagingResult, error) {
	guid, err := StagingTaskGUID(app, p.Random)
	if err != nil {
		return StagingResult{}, err
	}
	req := &bbsv1.DesireTaskRequest{TaskGuid: guid, Domain: StagingDomain, TaskDefinition: StagingTask(app, p.Blobstore)}
	if err := p.BBS.DesireTask(ctx, req); err != nil {
		return StagingResult{}, fmt.Errorf("desiring staging task: %w", err)
	}
	defer p.discardTask(ctx, guid)
	p.out.printf("Staging %s with task %s on stack %s", app.Name, guid, app.Stack)

	logs := &logFollower{out: p.out, source: StagingLogSource}
	defer logs.stop()
	task, err := p.waitTask(ctx, guid, func(cellID string) {
		if p.Logs != nil {
			logs.start(ctx, "staging logs", func(ctx context.Context, emit func([]*repv1.LogLine)) error {
				return p.Logs.FollowTask(ctx, guid, cellID, emit)
			})
		}
	})
	if err != nil {
		return StagingResult{}, err
	}
	logs.drain()
	if task.GetFailed() {
		return StagingResult{}, stagingFailure(app, task.GetFailureReason(), logs.lastStderr())
	}
	result, err := ParseStagingResult(task.GetResult())
	if err != nil {
		return StagingResult{}, fmt.Errorf("staging failed: %w", err)
	}
	p.out.printf("Staged %s: %s app, start command %q", app.Name, result.DetectedType, result.StartCommand)
	return result, nil
}

// stagingFailure names the cause of a failed staging task: the builder's last
// stderr line when one was seen, else the failure reason.
func stagingFailure(app App, reason, lastStderr string) error {
	switch {
	case strings.Contains(reason, noCompatibleCell):
		return fmt.Errorf("staging failed: no cell serves stack %q (rootfs %s)", app.Stack, app.RootFS())
	case lastStderr != "":
		return fmt.Errorf("staging failed: %s", lastStderr)
	case reason != "":
		return fmt.Errorf("staging failed: %s", reason)
	default:
		return errors.New("staging failed: the task failed without a reason")
	}
}

// waitTask polls the task until it is COMPLETED (or RESOLVING), calling placed once
// with its cell as soon as it has one.
func (p *pusher) waitTask(ctx context.Context, guid string, placed func(cellID string)) (*modelsv1.Task, error) {
	cell := ""
	for {
		task, err := p.BBS.GetTask(ctx, guid)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("staging did not finish: %w", ctx.Err())
			}
			return nil, fmt.Errorf("staging task %s: %w", guid, err)
		}
		if id := task.GetCellId(); id != "" && cell == "" {
			cell = id
			placed(id)
		}
		switch task.GetState() {
		case modelsv1.TaskState_TASK_STATE_COMPLETED, modelsv1.TaskState_TASK_STATE_RESOLVING:
			return task, nil
		}
		if err := p.sleep(ctx); err != nil {
			return nil, fmt.Errorf("staging task %s did not finish (still %s): %w", guid, models.TaskStateName(task.GetState()), err)
		}
	}
}

// discardTask cancels the task if it still runs, then resolves and deletes it, so
// that no staging task is left behind. It runs even when ctx is over.
func (p *pusher) discardTask(ctx context.Context, guid string) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	task, err := p.BBS.GetTask(cctx, guid)
	if err != nil {
		if models.FromError(err).Type != models.ErrTypeResourceNotFound {
			p.out.printf("warning: staging task %s: %v", guid, err)
		}
		return
	}
	steps := []struct {
		name string
		call func(context.Context, string) error
		when bool
	}{
		{"cancel", p.BBS.CancelTask, models.TaskCanBeCancelled(task.GetState())},
		{"resolve", p.BBS.ResolvingTask, task.GetState() != modelsv1.TaskState_TASK_STATE_RESOLVING},
		{"delete", p.BBS.DeleteTask, true},
	}
	for _, s := range steps {
		if !s.when {
			continue
		}
		if err := s.call(cctx, guid); err != nil && models.FromError(err).Type != models.ErrTypeResourceNotFound {
			p.out.printf("warning: could not %s staging task %s: %v", s.name, guid, err)
			return
		}
	}
}

// logFollower prints the lines of one stream (a staging task, an instance) as they
// arrive and remembers the last stderr line.
type logFollower struct {
	out *progress
	// source names lines that carry none.
	source string

	mu     sync.Mutex
	stderr string
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs follow in the background; what names the stream in a warning.
func (l *logFollower) start(ctx context.Context, what string, follow func(context.Context, func([]*repv1.LogLine)) error) {
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		if err := follow(ctx, l.emit); err != nil && ctx.Err() == nil {
			l.out.printf("warning: %s: %v", what, err)
		}
	}()
}

func (l *logFollower) emit(lines []*repv1.LogLine) {
	for _, line := range lines {
		source := line.GetSource()
		if source == "" {
			source = l.source
		}
		l.out.logLine(fmt.Sprintf("   [%s/%d] ", source, line.GetIndex()), line.GetText())
		if line.GetStream() == "stderr" && strings.TrimSpace(line.GetText()) != "" {
			l.mu.Lock()
			l.stderr = strings.TrimSpace(line.GetText())
			l.mu.Unlock()
		}
	}
}

// drain lets the stream deliver the last lines of a finished task: it ends by itself
// when the cell deletes the container; after logDrainTimeout it is cut.
func (l *logFollower) drain() {
	if l.done == nil {
		return
	}
	t := time.NewTimer(logDrainTimeout)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
	l.stop()
}

// stop ends the stream and waits for it.
func (l *logFollower) stop() {
	if l.done == nil {
		return
	}
	l.cancel()
	<-l.done
}

func (l *logFollower) lastStderr() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stderr
}
