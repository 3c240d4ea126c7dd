package commands_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/ctl/commands"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// evacuationFixture is two cells; cell-1's rep answers Evacuate and holds two
// instances, cell-2's rep is unreachable.
func evacuationFixture(t *testing.T) (*fakeTarget, *fakeRep) {
	t.Helper()
	var rep *fakeRep
	ft := startFakeBBS(t, func(f *fakeBBS) {
		rep = startFakeRep(t, f.pki, &fakeRep{})
		f.cells = []*modelsv1.CellPresence{
			{CellId: "cell-1", RepAddress: rep.addr},
			{CellId: "cell-2", RepAddress: unreachableAddress(t)},
		}
		f.actual = []*modelsv1.ActualLRP{
			{ProcessGuid: "web", Index: 0, CellId: "cell-1", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING},
			{ProcessGuid: "web", Index: 1, CellId: "cell-1", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED},
			{ProcessGuid: "web", Index: 2, CellId: "cell-2", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING},
		}
	})
	ft.env.PollInterval = 20 * time.Millisecond
	return ft, rep
}

func TestEvacuate(t *testing.T) {
	ft, rep := evacuationFixture(t)

	res := run(t, ft.env, "evacuate", "cell-1")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "cell cell-1 is evacuating\n", res.stdout)
	require.IsType(t, &repv1.EvacuateRequest{}, rep.recorded()[0])
	require.IsType(t, &bbsv1.ListCellsRequest{}, ft.bbs.lastRequest(t), "the rep address comes from ListCells")

	res = run(t, ft.env, "evacuate", "cell-1")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.Equal(t, "cell cell-1 is already evacuating\n", res.stdout)

	res = run(t, ft.env, "evacuate", "cell-1", "--json")
	require.Equal(t, commands.ExitOK, res.code, res.stderr)
	require.JSONEq(t, `{"cell_id":"cell-1","already_evacuating":true}`, res.stdout)
}

func TestEvacuateErrors(t *testing.T) {
	ft, _ := evacuationFixture(t)

	res := run(t, ft.env, "evacuate", "cell-9")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Equal(t, "droverctl: ResourceNotFound: cell cell-9 is not live: the BBS lists no presence for it\n", res.stderr)
	require.Empty(t, res.stdout)

	res = run(t, ft.env, "evacuate", "cell-2", "--timeout", "2s")
	require.Equal(t, commands.ExitFailure, res.code)
	require.True(t, strings.HasPrefix(res.stderr, "droverctl: Unavailable: rep of cell cell-2 at "), "the rep is named, not the BBS: %s", res.stderr)
}

// TestEvacuateWait follows an evacuation until the fake BBS stops listing the cell.
func TestEvacuateWait(t *testing.T) {
	ft, _ := evacuationFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan int, 1)
	go func() { done <- commands.Run(ctx, []string{"evacuate", "cell-1", "--wait"}, out, errOut, ft.env) }()

	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), "[0s] cell cell-1: 2 instances: 1 CLAIMED, 1 RUNNING\n")
	}, 10*time.Second, 10*time.Millisecond, "first progress: %s", out)

	ft.bbs.setActual([]*modelsv1.ActualLRP{
		{ProcessGuid: "web", Index: 0, CellId: "cell-1", State: modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING,
			Presence: modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING},
	})
	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), "[0s] cell cell-1: 1 instance: 1 RUNNING (EVACUATING)\n")
	}, 10*time.Second, 10*time.Millisecond, "progress after a change: %s", out)

	ft.bbs.setCells(nil)
	select {
	case code := <-done:
		require.Equal(t, commands.ExitOK, code, errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatal("evacuate --wait did not end when the cell's presence went away")
	}
	require.Equal(t, "cell cell-1 is evacuating\n"+
		"[0s] cell cell-1: 2 instances: 1 CLAIMED, 1 RUNNING\n"+
		"[0s] cell cell-1: 1 instance: 1 RUNNING (EVACUATING)\n"+
		"[0s] cell cell-1: gone, evacuation done\n", out.String(), "unchanged progress is not repeated")
	require.Empty(t, errOut.String())
}

func TestEvacuateWaitJSON(t *testing.T) {
	ft, _ := evacuationFixture(t)
	ft.bbs.setCells([]*modelsv1.CellPresence{{CellId: "cell-1", RepAddress: ft.bbs.cellsCopy()[0].GetRepAddress()}})
	ft.bbs.setActual(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- commands.Run(ctx, []string{"--json", "evacuate", "cell-1", "--wait"}, out, out, ft.env)
	}()
	require.Eventually(t, func() bool { return strings.Count(out.String(), "\n") == 2 }, 10*time.Second, 10*time.Millisecond)
	ft.bbs.setCells(nil)
	require.Equal(t, commands.ExitOK, <-done, out.String())

	got := lines(out.String())
	require.Len(t, got, 3)
	require.JSONEq(t, `{"cell_id":"cell-1","already_evacuating":false}`, got[0])
	require.JSONEq(t, `{"cell_id":"cell-1","elapsed_seconds":0,"instances":[],"done":false}`, got[1])
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(got[2]), &last))
	require.Equal(t, true, last["done"])
}

func TestEvacuateWaitTimesOut(t *testing.T) {
	ft, _ := evacuationFixture(t)
	res := run(t, ft.env, "evacuate", "cell-1", "--wait", "--timeout", "300ms")
	require.Equal(t, commands.ExitFailure, res.code)
	require.Equal(t, "droverctl: TimedOut: cell cell-1 is still present after 300ms (--timeout)\n", res.stderr)
	require.True(t, strings.HasPrefix(res.stdout, "cell cell-1 is evacuating\n[0s] cell cell-1: 2 instances"), res.stdout)
}

func TestEvacuateWaitInterrupted(t *testing.T) {
	ft, _ := evacuationFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan int, 1)
	go func() { done <- commands.Run(ctx, []string{"evacuate", "cell-1", "--wait"}, out, errOut, ft.env) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "2 instances") }, 10*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case code := <-done:
		require.Equal(t, commands.ExitInterrupted, code, errOut.String())
		require.Equal(t, "droverctl: interrupted\n", errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatal("evacuate --wait did not stop when interrupted")
	}
}
