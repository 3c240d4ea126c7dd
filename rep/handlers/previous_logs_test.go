package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/executor"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
	"drover.dev/rep/crashlogs"
	"drover.dev/rep/internal/fakeexec"
)

func TestStreamPreviousLogs(t *testing.T) {
	e := fakeexec.New(executor.Resources{MemoryMB: 1000, DiskMB: 1000, Containers: 10})
	for _, c := range logContainers() {
		e.Put(c)
	}
	e.SetLogs("i0", line("i0", "the running instance's line"))
	client, api := serve(t, e)

	t.Run("refused without a store", func(t *testing.T) {
		stream, err := client.StreamLogs(ctxT(t), &repv1.StreamLogsRequest{ProcessGuid: "pg", Previous: true})
		require.NoError(t, err)
		_, err = stream.Recv()
		require.Equal(t, codes.Unimplemented, status.Code(err))
	})

	store := crashlogs.New(crashlogs.Options{})
	api.SetPreviousLogs(store)
	store.Keep(crashlogs.Key{ProcessGuid: "pg", Index: 0}, []executor.LogLine{line("dead-0", "a"), line("dead-0", "b"), line("dead-0", "c")})
	store.Keep(crashlogs.Key{ProcessGuid: "pg", Index: 1}, []executor.LogLine{line("dead-1", "x")})
	store.Keep(crashlogs.Key{ProcessGuid: "gone", Index: 0}, []executor.LogLine{line("dead-g", "no container left")})

	texts := func(lines []*repv1.LogLine) []string {
		var out []string
		for _, l := range lines {
			out = append(out, l.GetText())
		}
		return out
	}

	t.Run("the crashed predecessors' lines, not the running instance's", func(t *testing.T) {
		stream, err := client.StreamLogs(ctxT(t), &repv1.StreamLogsRequest{ProcessGuid: "pg", Previous: true})
		require.NoError(t, err)
		lines := receiveAll(t, stream)
		require.Equal(t, []string{"a", "b", "c", "x"}, texts(lines))
		require.Equal(t, "dead-1", lines[3].GetContainerGuid())
		require.Equal(t, int32(1), lines[3].GetIndex())
		require.Equal(t, "pg", lines[3].GetProcessGuid())
		require.Equal(t, time.Unix(0, 42).UnixNano(), lines[0].GetTimestamp())
	})

	t.Run("one index, tail", func(t *testing.T) {
		zero := int32(0)
		stream, err := client.StreamLogs(ctxT(t), &repv1.StreamLogsRequest{ProcessGuid: "pg", Index: &zero, Tail: 2, Previous: true})
		require.NoError(t, err)
		require.Equal(t, []string{"b", "c"}, texts(receiveAll(t, stream)))
	})

	t.Run("kept after the containers are gone", func(t *testing.T) {
		stream, err := client.StreamLogs(ctxT(t), &repv1.StreamLogsRequest{ProcessGuid: "gone", Previous: true})
		require.NoError(t, err)
		require.Equal(t, []string{"no container left"}, texts(receiveAll(t, stream)))
	})

	t.Run("errors", func(t *testing.T) {
		seven := int32(7)
		for _, tc := range []struct {
			req  *repv1.StreamLogsRequest
			code codes.Code
			msg  string
		}{
			{&repv1.StreamLogsRequest{ProcessGuid: "pg", Previous: true, Follow: true}, codes.InvalidArgument, "follow must be false"},
			{&repv1.StreamLogsRequest{TaskGuid: "task-1", Previous: true}, codes.InvalidArgument, "task_guid must be empty"},
			{&repv1.StreamLogsRequest{TaskGuid: "task-1", Previous: true, Follow: true}, codes.InvalidArgument, "(task_guid must be empty); previous cannot follow"},
			{&repv1.StreamLogsRequest{Previous: true}, codes.InvalidArgument, "process_guid or task_guid is required"},
			{&repv1.StreamLogsRequest{ProcessGuid: "pg", Previous: true, Tail: -1}, codes.InvalidArgument, "tail must not be negative"},
			{&repv1.StreamLogsRequest{ProcessGuid: "other", Previous: true}, codes.NotFound, `no crashed instance of process_guid "other" kept`},
			{&repv1.StreamLogsRequest{ProcessGuid: "pg", Index: &seven, Previous: true}, codes.NotFound, "index 7"},
		} {
			stream, err := client.StreamLogs(ctxT(t), tc.req)
			require.NoError(t, err)
			_, err = stream.Recv()
			require.Equal(t, tc.code, status.Code(err), "%v", tc.req)
			require.Contains(t, status.Convert(err).Message(), tc.msg)
		}
	})
}
