package output_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/output"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

func TestPrintable(t *testing.T) {
	tests := []struct{ in, want, log string }{
		{"plain-guid_1", "plain-guid_1", "plain-guid_1"},
		{"ünïcödé ✓", "ünïcödé ✓", "ünïcödé ✓"},
		{"red \x1b[31mtext\x1b[0m", `red \x1b[31mtext\x1b[0m`, `red \x1b[31mtext\x1b[0m`},
		{"title \x1b]0;owned\x07", `title \x1b]0;owned\a`, `title \x1b]0;owned\a`},
		{"nul\x00 del\x7f", `nul\x00 del\x7f`, `nul\x00 del\x7f`},
		{"fake\nline", `fake\nline`, "fake\nline"},
		{"a\tb\rc", `a\tb\rc`, "a\tb\\rc"},
		{"c1 csi \u009b31m nel \u0085", `c1 csi \u009b31m nel \u0085`, `c1 csi \u009b31m nel \u0085`},
		{"bad utf8 \xff\xfe", `bad utf8 \xff\xfe`, `bad utf8 \xff\xfe`},
		{"a backslash \\x1b stays", `a backslash \x1b stays`, `a backslash \x1b stays`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, output.Printable(tt.in), "Printable(%q)", tt.in)
		require.Equal(t, tt.log, output.PrintableLog(tt.in), "PrintableLog(%q)", tt.in)
	}
}

func TestServerTextIsEscapedWherePrinted(t *testing.T) {
	hostile := "guid\x1b[2J\x1b]0;owned\x07"
	escaped := `guid\x1b[2J\x1b]0;owned\a`

	table := output.NewTable("GUID", "REASON")
	table.Add(hostile, "crash\x00\nagain")
	var buf bytes.Buffer
	require.NoError(t, table.Render(&buf))
	require.Contains(t, buf.String(), escaped)
	require.Contains(t, buf.String(), `crash\x00 again`)
	require.NotContains(t, buf.String(), "\x1b")

	var props output.Properties
	props.Add("reason", hostile)
	buf.Reset()
	require.NoError(t, props.Render(&buf))
	require.Contains(t, buf.String(), escaped)

	event := &modelsv1.Event{Sequence: 7, Payload: &modelsv1.Event_TaskRemoved{TaskRemoved: &modelsv1.TaskRemovedEvent{
		Task: &modelsv1.Task{TaskGuid: hostile},
	}}}
	require.Contains(t, output.EventLine(event), escaped)
	require.NotContains(t, output.EventLine(event), "\x1b")

	line := output.FormatLogLine(&repv1.LogLine{Timestamp: time.Unix(0, 0).UnixNano(), Source: "APP\x1b", Text: "col1\tcol2 \x1b[31mred"})
	require.Equal(t, "1970-01-01T00:00:00.000Z [APP\\x1b] col1\tcol2 \\x1b[31mred", line)

	progress := output.EvacuationProgress{CellID: hostile}
	require.Contains(t, progress.String(), escaped)
}
