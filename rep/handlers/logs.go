package handlers

import (
	"context"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/executor"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
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
