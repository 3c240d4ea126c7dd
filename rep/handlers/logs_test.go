package handlers

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/executor"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/internal/fakeexec"
)

func logContainers() []executor.Container {
	lrp := func(guid, pg, index string) executor.Container {
		return executor.Container{Guid: guid, Tags: map[string]string{executor.TagLifecycle: "lrp", executor.TagProcessGuid: pg, executor.TagProcessIndex: index}}
	}
	return []executor.Container{
		lrp("i0", "pg", "0"), lrp("i1", "pg", "1"), lrp("o0", "other", "0"),
		{Guid: "task-1", Tags: map[string]string{executor.TagLifecycle: "task"}},
		{Guid: "pg", Tags: map[string]string{executor.TagLifecycle: "task"}},
	}
}

func TestSelectLogContainers(t *testing.T) {
	one := int32(1)
	nine := int32(9)
	tests := []struct {
		name string
		req  *repv1.StreamLogsRequest
		want []string
	}{
		{name: "every instance of a process", req: &repv1.StreamLogsRequest{ProcessGuid: "pg"}, want: []string{"i0", "i1"}},
		{name: "one index", req: &repv1.StreamLogsRequest{ProcessGuid: "pg", Index: &one}, want: []string{"i1"}},
		{name: "missing index", req: &repv1.StreamLogsRequest{ProcessGuid: "pg", Index: &nine}, want: nil},
		{name: "a task", req: &repv1.StreamLogsRequest{TaskGuid: "task-1"}, want: []string{"task-1"}},
		{name: "a task guid never selects an instance", req: &repv1.StreamLogsRequest{TaskGuid: "i0"}, want: nil},
		{name: "nothing asked", req: &repv1.StreamLogsRequest{}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range SelectLogContainers(tt.req, logContainers()) {
				got = append(got, c.Guid)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func line(guid, text string) executor.LogLine {
	return executor.LogLine{ContainerGuid: guid, Source: "APP", Stream: "stdout", Text: text, Time: time.Unix(0, 42)}
}

func receiveAll(t *testing.T, stream repv1.RepService_StreamLogsClient) []*repv1.LogLine {
	t.Helper()
	var lines []*repv1.LogLine
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return lines
		}
		require.NoError(t, err)
		lines = append(lines, resp.GetLines()...)
	}
}

func TestStreamLogs(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10})
	for _, c := range logContainers() {
		e.Put(c)
	}
	e.SetLogs("i0", line("i0", "a"), line("i0", "b"), line("i0", "c"))
	e.SetLogs("i1", line("i1", "x"))
	e.SetLogs("o0", line("o0", "not mine"))
	client, _ := serve(t, e)

	t.Run("kept lines of the selected instances, then the end", func(t *testing.T) {
		stream, err := client.StreamLogs(ctxT(t), &repv1.StreamLogsRequest{ProcessGuid: "pg"})
		require.NoError(t, err)
		lines := receiveAll(t, stream)
		var texts []string
		for _, l := range lines {
			texts = append(texts, l.GetText())
			require.Equal(t, "pg", l.GetProcessGuid())
			require.Equal(t, int64(42), l.GetTimestamp())
			if l.GetContainerGuid() == "i1" {
				require.Equal(t, int32(1), l.GetIndex())
			}
		}
		require.ElementsMatch(t, []string{"a", "b", "c", "x"}, texts)
	})

	t.Run("tail", func(t *testing.T) {
		zero := int32(0)
		stream, err := client.StreamLogs(ctxT(t), &repv1.StreamLogsRequest{ProcessGuid: "pg", Index: &zero, Tail: 1})
		require.NoError(t, err)
		lines := receiveAll(t, stream)
		require.Len(t, lines, 1)
		require.Equal(t, "c", lines[0].GetText())
	})

	t.Run("follow sends new lines until the container goes", func(t *testing.T) {
		stream, err := client.StreamLogs(ctxT(t), &repv1.StreamLogsRequest{TaskGuid: "task-1", Follow: true})
		require.NoError(t, err)
		follow := e.FollowChannel("task-1")
		follow <- line("task-1", "live")
		resp, err := stream.Recv()
		require.NoError(t, err)
		require.Equal(t, "live", resp.GetLines()[0].GetText())
		require.NoError(t, e.Delete(ctxT(t), "task-1"))
		_, err = stream.Recv()
		require.Equal(t, io.EOF, err)
	})

	t.Run("errors", func(t *testing.T) {
		for _, req := range []*repv1.StreamLogsRequest{{}, {ProcessGuid: "pg", Tail: -1}} {
			stream, err := client.StreamLogs(ctxT(t), req)
			require.NoError(t, err)
			_, err = stream.Recv()
			require.Equal(t, codes.InvalidArgument, status.Code(err))
		}
		stream, err := client.StreamLogs(ctxT(t), &repv1.StreamLogsRequest{ProcessGuid: "nobody"})
		require.NoError(t, err)
		_, err = stream.Recv()
		require.Equal(t, codes.NotFound, status.Code(err))
	})
}
