package harmonizer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/executor"
	"drover.dev/rep/crashlogs"
	"drover.dev/rep/internal/fakeexec"
)

func TestCrashedInstanceKeepsItsLastLines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		result    executor.RunResult
		bbsDown   bool
		execCalls []string
		kept      []string
	}{
		{"crash: the last lines are kept", executor.RunResult{Failed: true, FailureReason: "Exited with status 1"}, false, []string{"delete ig-1"}, []string{"two", "three"}},
		{"crash, BBS unreachable: kept before the report, the container stays", executor.RunResult{Failed: true, FailureReason: "x"}, true, nil, []string{"two", "three"}},
		{"stop: nothing is kept", executor.RunResult{Stopped: true}, false, []string{"delete ig-1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBBS()
			e := fakeexec.New(executor.Resources{MemoryMB: 1024, DiskMB: 1024, Containers: 10})
			c := lrpContainer(executor.StateCompleted)
			c.RunResult = tc.result
			e.Put(c)
			e.SetLogs(c.Guid,
				executor.LogLine{ContainerGuid: c.Guid, Text: "one"},
				executor.LogLine{ContainerGuid: c.Guid, Text: "two"},
				executor.LogLine{ContainerGuid: c.Guid, Text: "three"})
			store := crashlogs.New(crashlogs.Options{MaxLines: 2})
			if tc.bbsDown {
				b.errs["crash"] = unavailable
			}
			h := New(Config{CellID: cellID, PollingInterval: time.Minute, CrashLogs: store}, e, b, nil, nil)

			h.ProcessContainer(context.Background(), c.Guid)

			require.Equal(t, tc.execCalls, e.Calls())
			var texts []string
			for _, entry := range store.Get("pg-1", nil) {
				require.Equal(t, int32(2), entry.Index)
				for _, l := range entry.Lines {
					texts = append(texts, l.Text)
				}
			}
			require.Equal(t, tc.kept, texts)
		})
	}
}
