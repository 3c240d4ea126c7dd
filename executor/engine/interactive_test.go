package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/executor"
)

// TestExecInteractiveOnlyInRunningContainers: an operator's process runs in a running
// container only; it then reaches the runtime with its spec.
func TestExecInteractiveOnlyInRunningContainers(t *testing.T) {
	rt := newRuntime()
	e := startClean(t, fastConfig(), rt)
	ctx := context.Background()
	spec := executor.InteractiveSpec{Args: []string{"sh", "-c", "exit 3"}, User: "vcap"}

	_, err := e.ExecInteractive(ctx, "nope", spec)
	require.ErrorIs(t, err, executor.ErrContainerNotFound)
	allocate(t, e, "reserved", 1)
	_, err = e.ExecInteractive(ctx, "reserved", spec)
	require.ErrorIs(t, err, executor.ErrInvalidStateTransition)
	_, err = e.ExecInteractive(ctx, "reserved", executor.InteractiveSpec{})
	require.ErrorContains(t, err, "args")

	startContainer(t, e, "g", runInfo(run("sleep")))
	waitState(t, e, "g", executor.StateRunning)
	var out strings.Builder
	spec.Args, spec.Stdout = []string{"sh", "-c", "echo hi; exit 3"}, &out
	p, err := e.ExecInteractive(ctx, "g", spec)
	require.NoError(t, err)
	exit, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, exit.Code)
	require.Equal(t, "hi\n", out.String())
	procs := rt.Interactives("g")
	require.Len(t, procs, 1)
	require.Equal(t, "vcap", procs[0].Spec.User)

	require.NoError(t, e.Stop(ctx, "g"))
	waitState(t, e, "g", executor.StateCompleted)
	_, err = e.ExecInteractive(ctx, "g", spec)
	require.ErrorIs(t, err, executor.ErrInvalidStateTransition)
}
