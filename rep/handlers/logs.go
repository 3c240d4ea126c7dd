package handlers

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/executor"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/crashlogs"
)

// Log batching: a response carries at most logBatchLines lines and is sent at the
// latest logFlushInterval after its first line.
const (
	logBatchLines    = 100
	logFlushInterval = 50 * time.Millisecond
)

// SelectLogContainers picks the containers a StreamLogs request names: an LRP's
// instances (all, or the one index) or a task's container.
func SelectLogContainers(req *repv1.StreamLogsRequest, containers []executor.Container) []executor.Container {
	var out []executor.Container
	for _, c := range containers {
		switch {
		case req.GetTaskGuid() != "":
			if c.Guid == req.GetTaskGuid() && c.Tags[executor.TagLifecycle] == executor.LifecycleTask {
				out = append(out, c)
			}
		case req.GetProcessGuid() != "":
			if c.Tags[executor.TagLifecycle] != executor.LifecycleLRP || c.Tags[executor.TagProcessGuid] != req.GetProcessGuid() {
				continue
			}
			if req.Index != nil && c.Tags[executor.TagProcessIndex] != strconv.Itoa(int(req.GetIndex())) {
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// taggedLine is a log line with the instance it came from.
type taggedLine struct {
	line        executor.LogLine
	processGuid string
	index       int32
}

// StreamLogs sends the kept lines of the selected containers, then, with follow, new
// lines until the client goes away or every container is deleted.
func (s *Server) StreamLogs(req *repv1.StreamLogsRequest, stream repv1.RepService_StreamLogsServer) error {
	if req.GetProcessGuid() == "" && req.GetTaskGuid() == "" {
		return status.Error(codes.InvalidArgument, "process_guid or task_guid is required")
	}
	if req.GetTail() < 0 {
		return status.Error(codes.InvalidArgument, "tail must not be negative")
	}
	if req.GetPrevious() {
		return s.streamPreviousLogs(req, stream)
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	containers, err := s.exec.List(ctx)
	if err != nil {
		return executorError("list containers", err)
	}
	selected := SelectLogContainers(req, containers)
	if len(selected) == 0 {
		return status.Errorf(codes.NotFound, "no container for process_guid %q task_guid %q on cell %s", req.GetProcessGuid(), req.GetTaskGuid(), s.cell.ID)
	}
	lines := make(chan taggedLine, logBatchLines)
	var wg sync.WaitGroup
	for _, c := range selected {
		ch, err := s.exec.Logs(ctx, c.Guid, executor.LogOptions{Tail: int(req.GetTail()), Follow: req.GetFollow()})
		if err != nil {
			cancel()
			wg.Wait()
			return executorError("logs", err)
		}
		index, _ := strconv.Atoi(c.Tags[executor.TagProcessIndex])
		pg := c.Tags[executor.TagProcessGuid]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range ch {
				select {
				case lines <- taggedLine{line: l, processGuid: pg, index: int32(index)}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(lines)
	}()
	return sendBatches(ctx, stream, lines)
}

// sendBatches groups lines into responses until lines closes or ctx ends.
func sendBatches(ctx context.Context, stream repv1.RepService_StreamLogsServer, lines <-chan taggedLine) error {
	var batch []*repv1.LogLine
	timer := time.NewTimer(logFlushInterval)
	timer.Stop()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := stream.Send(&repv1.StreamLogsResponse{Lines: batch})
		batch = nil
		return err
	}
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return flush()
			}
			if len(batch) == 0 {
				timer.Reset(logFlushInterval)
			}
			batch = append(batch, &repv1.LogLine{
				ContainerGuid: l.line.ContainerGuid,
				ProcessGuid:   l.processGuid,
				Index:         l.index,
				Source:        l.line.Source,
				Stream:        l.line.Stream,
				Text:          l.line.Text,
				Timestamp:     l.line.Time.UnixNano(),
			})
			if len(batch) >= logBatchLines {
				timer.Stop()
				if err := flush(); err != nil {
					return err
				}
			}
		case <-timer.C:
			if err := flush(); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// PreviousLogs is the kept output of crashed instances (crashlogs.Store).
type PreviousLogs interface {
	Get(processGuid string, index *int32) []crashlogs.Entry
}

// SetPreviousLogs makes StreamLogs answer previous requests from p; call it before
// serving.
func (s *Server) SetPreviousLogs(p PreviousLogs) { s.previous = p }

// streamPreviousLogs sends the kept last lines of the crashed predecessors of an LRP's
// instances (of one index when set), the last tail of each when tail is set.
func (s *Server) streamPreviousLogs(req *repv1.StreamLogsRequest, stream repv1.RepService_StreamLogsServer) error {
	var bad []string
	if req.GetTaskGuid() != "" {
		bad = append(bad, "previous is for an LRP's instances, not a task (task_guid must be empty)")
	}
	if req.GetFollow() {
		bad = append(bad, "previous cannot follow: a crashed instance writes no more lines (follow must be false)")
	}
	if len(bad) > 0 {
		return status.Error(codes.InvalidArgument, strings.Join(bad, "; "))
	}
	if s.previous == nil {
		return status.Errorf(codes.Unimplemented, "cell %s keeps no output of crashed instances", s.cell.ID)
	}
	entries := s.previous.Get(req.GetProcessGuid(), req.Index)
	if len(entries) == 0 {
		return status.Errorf(codes.NotFound, "no crashed instance of process_guid %q%s kept on cell %s", req.GetProcessGuid(), indexText(req.Index), s.cell.ID)
	}
	var batch []*repv1.LogLine
	for _, e := range entries {
		lines := e.Lines
		if tail := int(req.GetTail()); tail > 0 && len(lines) > tail {
			lines = lines[len(lines)-tail:]
		}
		for _, l := range lines {
			batch = append(batch, &repv1.LogLine{
				ContainerGuid: l.ContainerGuid,
				ProcessGuid:   e.ProcessGuid,
				Index:         e.Index,
				Source:        l.Source,
				Stream:        l.Stream,
				Text:          l.Text,
				Timestamp:     l.Time.UnixNano(),
			})
			if len(batch) == logBatchLines {
				if err := stream.Send(&repv1.StreamLogsResponse{Lines: batch}); err != nil {
					return err
				}
				batch = nil
			}
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return stream.Send(&repv1.StreamLogsResponse{Lines: batch})
}

// indexText is " index N" for a set index, else "".
func indexText(index *int32) string {
	if index == nil {
		return ""
	}
	return " index " + strconv.Itoa(int(*index))
}
