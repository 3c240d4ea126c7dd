package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack/devstacktest"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Restart schedule of reference/bbs.md §3.3 as the BBS's default policy applies it.
const (
	// delayedCrash is the first crash count whose restart waits (the 1st and 2nd restart
	// at once, inside the crash call).
	delayedCrash = 3
	// firstBackoff is the wait before restarting after crash delayedCrash.
	firstBackoff = 30 * time.Second
	// restartSlack covers the rep's claim of the restarted instance and clock reads.
	restartSlack = 10 * time.Second
)

// TestConvergeCrashLoopRealTiming (issue 4, acceptance 5) is the one scenario on the real
// clock (~45 s): an instance whose process exits at once crashes and is restarted
// immediately twice (by the BBS in the crash call), then stays CRASHED with crash_count 3
// until since + 30 s, and the converger restarts it after that, within since + 30 s + 2
// intervals + slack. The plan's table tests check the whole schedule on a shortened clock.
func TestConvergeCrashLoopRealTiming(t *testing.T) {
	cs := newConvergeStack(t, convergeOptions{cells: 1})
	const guid = "crash-loop"
	lrp := httpdLRP(guid, 1)
	lrp.Ports = nil
	lrp.CheckDefinition = nil
	lrp.Action = shAction("exit 1")
	desired := time.Now()
	cs.desire(t, lrp)

	third := cs.waitActuals(t, guid, runningWait, "CRASHED after the third crash", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 1 && as[0].GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED && as[0].GetCrashCount() == delayedCrash
	})[0]
	since := time.Unix(0, third.GetSince())
	// The first two restarts did not wait for any backoff.
	require.Less(t, since.Sub(desired), firstBackoff, "three crashes took longer than one backoff: the first two restarts waited")

	due := since.Add(firstBackoff)
	latest := due.Add(2*devstacktest.ConvergeInterval + restartSlack)
	for {
		as := cs.actuals(t, guid)
		require.Len(t, as, 1)
		a := as[0]
		restarted := a.GetState() != modelsv1.ActualLRPState_ACTUAL_LRP_STATE_CRASHED || a.GetCrashCount() > delayedCrash
		now := time.Now()
		if restarted {
			require.False(t, now.Before(due), "restarted %s before since + %s (state %s crash_count %d)",
				due.Sub(now).Round(time.Millisecond), firstBackoff, a.GetState(), a.GetCrashCount())
			t.Logf("restarted %s after since + %s", now.Sub(due).Round(time.Millisecond), firstBackoff)
			return
		}
		require.Equal(t, third.GetInstanceGuid(), a.GetInstanceGuid(), "the CRASHED row is the same instance")
		if now.After(latest) {
			t.Fatalf("not restarted by since + %s + 2 intervals + %s: %s", firstBackoff, restartSlack, describeActuals(as))
		}
		time.Sleep(cellPoll)
	}
}
