package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// TestCellsHTTPInstancesRunAndServe: 3 busybox httpd instances reach RUNNING through
// UNCLAIMED → CLAIMED → RUNNING, each host port answers with its own index; scaling
// down, retiring (kill) an instance and deleting the LRP leave nothing on the host.
func TestCellsHTTPInstancesRunAndServe(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := subscribe(ctx, t, cs.bbs, nil)

	const guid = "httpd"
	cs.desire(t, httpdLRP(guid, 3))
	running := cs.waitRunning(t, guid, 3)
	for _, a := range running {
		requireServesIndex(t, a)
	}

	// Every index went UNCLAIMED → CLAIMED → RUNNING, in that order.
	states := map[int32][]modelsv1.ActualLRPState{}
	deadline := time.After(settleWait)
	for !allReachedRunning(states, 3) {
		select {
		case e, ok := <-events:
			require.True(t, ok, "the event stream ended")
			recordState(states, e)
		case <-deadline:
			t.Fatalf("events did not show every index reach RUNNING: %v", states)
		}
	}
	for index, seq := range states {
		want := []modelsv1.ActualLRPState{
			modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED,
			modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CLAIMED,
			modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING,
		}
		require.Equal(t, want, slices.Compact(seq), "states of index %d", index)
	}

	// Scale down to 1: indices 1 and 2 stop, their containers go.
	one := int32(1)
	_, err := cs.bbs.UpdateDesiredLRP(callCtx(t), &bbsv1.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: &modelsv1.DesiredLRPUpdate{Instances: &one}})
	require.NoError(t, err)
	cs.waitActuals(t, guid, settleWait, "scaled down to index 0", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 1 && as[0].GetIndex() == 0 && as[0].GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	})
	require.Eventually(t, func() bool {
		return len(instancePids(running[1].GetInstanceGuid(), "")) == 0 && len(instancePids(running[2].GetInstanceGuid(), "")) == 0
	}, settleWait, cellPoll, "the processes of the scaled-down instances still run")

	// Retire (kill) index 0: its process stops and a new instance replaces it.
	_, err = cs.bbs.RetireActualLRP(callCtx(t), &bbsv1.RetireActualLRPRequest{ActualLrpKey: &modelsv1.ActualLRPKey{ProcessGuid: guid, Index: 0, Domain: cellDomain}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(instancePids(running[0].GetInstanceGuid(), "")) == 0 },
		settleWait, cellPoll, "the retired instance's processes still run")
	// Without a converger nothing replaces a retired instance (upstream: the converger
	// creates the missing one); the row leaves RUNNING.
	cs.waitActuals(t, guid, settleWait, "index 0 no longer RUNNING", func(as []*modelsv1.ActualLRP) bool {
		return countState(as, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING) == 0
	})
	cs.requireHostClean(t)

	cs.removeAndWaitClean(t, guid)
}

// recordState appends the state an event gives an index.
func recordState(states map[int32][]modelsv1.ActualLRPState, e *modelsv1.Event) {
	switch p := e.GetPayload().(type) {
	case *modelsv1.Event_ActualLrpInstanceCreated:
		a := p.ActualLrpInstanceCreated.GetActualLrp()
		states[a.GetIndex()] = append(states[a.GetIndex()], a.GetState())
	case *modelsv1.Event_ActualLrpInstanceChanged:
		i := p.ActualLrpInstanceChanged.GetActualLrpKey().GetIndex()
		states[i] = append(states[i], p.ActualLrpInstanceChanged.GetAfter().GetState())
	}
}

func allReachedRunning(states map[int32][]modelsv1.ActualLRPState, n int) bool {
	if len(states) < n {
		return false
	}
	for _, seq := range states {
		if !slices.Contains(seq, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING) {
			return false
		}
	}
	return true
}

// TestCellsCrashedProcessRestarts: killing an instance's process makes it crash and run
// again with crash_count 1 and a crash_reason.
func TestCellsCrashedProcessRestarts(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	const guid = "crashy"
	cs.desire(t, httpdLRP(guid, 1))
	first := cs.waitRunning(t, guid, 1)[0]

	killInstanceProcess(t, first.GetInstanceGuid(), "httpd")
	again := cs.waitActuals(t, guid, runningWait, "RUNNING again after one crash", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 1 && as[0].GetCrashCount() == 1 && as[0].GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING
	})[0]
	require.NotEmpty(t, again.GetCrashReason())
	requireServesIndex(t, again)
	cs.removeAndWaitClean(t, guid)
}

// TestCellsFailingHealthCheckCrashes: a check that never passes crashes the instance
// after start_timeout with a reason naming the health check.
func TestCellsFailingHealthCheckCrashes(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	const guid = "never-healthy"
	lrp := httpdLRP(guid, 1)
	lrp.StartTimeout = 2
	lrp.CheckDefinition = &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: 9999}}}}
	cs.desire(t, lrp)
	crashed := cs.waitActuals(t, guid, runningWait, "a crash", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 1 && as[0].GetCrashCount() >= 1
	})[0]
	require.Contains(t, strings.ToLower(crashed.GetCrashReason()), "health", "crash reason %q", crashed.GetCrashReason())
	cs.removeAndWaitClean(t, guid)
}

// TestCellsOutOfMemoryCrash: an instance allocating beyond memory_mb is killed and its
// crash reason says out of memory.
func TestCellsOutOfMemoryCrash(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	const guid = "memory-hog"
	lrp := httpdLRP(guid, 1)
	lrp.MemoryMb = 32
	lrp.Ports = nil
	lrp.CheckDefinition = nil
	// tail keeps the whole newline-free input in memory.
	lrp.Action = shAction("head -c 512m /dev/zero | tail")
	cs.desire(t, lrp)
	crashed := cs.waitActuals(t, guid, runningWait, "an out-of-memory crash", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 1 && as[0].GetCrashCount() >= 1
	})[0]
	require.Contains(t, strings.ToLower(crashed.GetCrashReason()), "out of memory", "crash reason %q", crashed.GetCrashReason())
	cs.removeAndWaitClean(t, guid)
}

// TestCellsMaxPids: an instance's processes never exceed max_pids.
func TestCellsMaxPids(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	const guid = "forker"
	const maxPids = 10
	lrp := httpdLRP(guid, 1)
	lrp.MaxPids = maxPids
	lrp.Ports = nil
	lrp.CheckDefinition = nil
	lrp.Action = shAction("for i in $(seq 1 40); do sleep 1000 & done; exec sleep 1000")
	cs.desire(t, lrp)
	a := cs.waitRunning(t, guid, 1)[0]
	require.Eventually(t, func() bool { return len(instancePids(a.GetInstanceGuid(), "sleep")) >= maxPids/2 },
		settleWait, cellPoll, "the instance started no processes")
	require.LessOrEqual(t, len(instancePids(a.GetInstanceGuid(), "")), maxPids, "processes of an instance with max_pids %d", maxPids)
	cs.removeAndWaitClean(t, guid)
}

// TestCellsRepKillAndRestartKeepsInstances: kill -9 of the rep leaves its instances
// running, serving and RUNNING; the restarted rep manages them again (stops them).
func TestCellsRepKillAndRestartKeepsInstances(t *testing.T) {
	cs := newCellStack(t, 1, nil)
	const guid = "survivor"
	cs.desire(t, httpdLRP(guid, 2))
	before := cs.waitRunning(t, guid, 2)

	rep := cs.Reps[0]
	require.NoError(t, rep.Kill(ctxFor(t, settleWait)))
	for _, a := range before {
		requireServesIndex(t, a)
	}
	require.NoError(t, rep.Start(ctxFor(t, runningWait)))
	require.NoError(t, cs.WaitForCells(t.Context(), settleWait))

	after := cs.waitRunning(t, guid, 2)
	for i, a := range after {
		require.Equal(t, before[i].GetInstanceGuid(), a.GetInstanceGuid(), "index %d kept its instance", i)
		requireServesIndex(t, a)
	}
	cs.removeAndWaitClean(t, guid)
	for _, a := range before {
		require.Empty(t, instancePids(a.GetInstanceGuid(), ""), "the new rep stopped instance %d", a.GetIndex())
	}
}
