package commands_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/commands"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestServerTextIsEscaped checks that what the BBS sends back (guids, reasons, error
// messages that echo a request) cannot drive the terminal droverctl prints on.
func TestServerTextIsEscaped(t *testing.T) {
	hostile := "t\x1b]0;owned\x07\x1b[2J"
	escaped := `t\x1b]0;owned\a\x1b[2J`
	ft := startFakeBBS(t, func(f *fakeBBS) {
		f.tasks = []*modelsv1.Task{{TaskGuid: hostile, Domain: "d", State: modelsv1.TaskState_TASK_STATE_COMPLETED,
			Failed: true, FailureReason: "exit\x00\x1b[31m 1", TaskDefinition: &modelsv1.TaskDefinition{Rootfs: "preloaded:x"}}}
	})

	// runClean runs droverctl and checks that nothing it printed holds a control character.
	runClean := func(args ...string) result {
		res := run(t, ft.env, args...)
		for _, out := range []string{res.stdout, res.stderr} {
			require.False(t, strings.ContainsAny(out, "\x1b\x00\x07"), "printed %q", out)
		}
		return res
	}
	res := runClean("tasks")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, escaped)

	res = runClean("task", "show", hostile)
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, `exit\x00\x1b[31m 1`)

	res = runClean("task", "cancel", "missing\x1b[2J")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Contains(t, res.stderr, `missing\x1b[2J`, "error messages echo the guid escaped")

	res = runClean("cell", "cordon", "cell\x1b[2J")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "cell cell\\x1b[2J is cordoned\n", res.stdout)
}
