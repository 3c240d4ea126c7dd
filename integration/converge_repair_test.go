package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	convergerconfig "drover.dev/converger/config"
	"drover.dev/devstack"
	libconfig "drover.dev/lib/config"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repconfig "drover.dev/rep/config"
)

// TestConvergeAuctioneerDown (issue 4, acceptance 3a): with the auctioneer stopped, the
// BBS accepts a desired LRP but its auction request fails, so the instances stay
// UNCLAIMED; once the auctioneer is back they reach RUNNING with no other action: the
// converger re-auctions UNCLAIMED rows older than stale_unclaimed_duration, shortened
// here to 3 s (30 s by default) to keep the test short.
func TestConvergeAuctioneerDown(t *testing.T) {
	const staleUnclaimed = 3 * time.Second
	cs := newConvergeStack(t, convergeOptions{cells: 1, configureConverger: func(c *convergerconfig.Config) {
		c.StaleUnclaimedDuration = libconfig.Duration(staleUnclaimed)
	}})
	require.NoError(t, cs.Auctioneer.Stop(ctxFor(t, settleWait)))

	const guid = "auction-lost"
	cs.desire(t, httpdLRP(guid, 2))
	unclaimed := cs.actuals(t, guid)
	require.Len(t, unclaimed, 2)
	for _, a := range unclaimed {
		require.Equal(t, modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED, a.GetState(), "index %d", a.GetIndex())
	}
	// Passes go by while the auctioneer is away; nothing places the instances.
	cs.waitPasses(t, 2, nil)
	require.Zero(t, countState(cs.actuals(t, guid), modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING))

	require.NoError(t, cs.Auctioneer.Start(ctxFor(t, runningWait)))
	for _, a := range cs.waitRunning(t, guid, 2) {
		requireServesIndex(t, a)
	}
}

// TestConvergeDeletedRow (issue 4, acceptance 3b): a RUNNING instance's row deleted
// behind the system's back (SQL) comes back RUNNING: the converger creates the missing
// index, and the rep, whose container still runs the old instance, either adopts it
// (its start call upserts the row with the old instance) or stops it once a new
// instance runs. Either way the end state is exactly `instances` RUNNING rows and as
// many containers on the cell.
func TestConvergeDeletedRow(t *testing.T) {
	cs := newConvergeStack(t, convergeOptions{cells: 1, configureRep: func(_ int, c *repconfig.Config) {
		// The rep's sync with the BBS (30 s by default) finds the orphaned container.
		c.PollingInterval = libconfig.Duration(2 * time.Second)
	}})
	const guid = "row-deleted"
	const instances = 2
	cs.desire(t, httpdLRP(guid, instances))
	before := cs.waitRunning(t, guid, instances)
	rep := cs.Reps[0]
	require.Len(t, cs.containersOf(t, rep), instances)

	cs.exec(t, 1, `DELETE FROM actual_lrps WHERE process_guid = $1 AND instance_index = 0`, guid)
	after := cs.waitRunning(t, guid, instances)
	for _, a := range after {
		requireServesIndex(t, a)
	}
	adopted := after[0].GetInstanceGuid() == before[0].GetInstanceGuid()
	t.Logf("index 0 came back RUNNING; the old instance was adopted: %v", adopted)

	// One container per instance: an orphaned old container goes.
	var containers []string
	deadline := time.Now().Add(settleWait)
	for {
		containers = cs.containersOf(t, rep)
		if len(containers) == instances {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cell holds %d containers, want %d: %v", len(containers), instances, containers)
		}
		time.Sleep(cellPoll)
	}
	if !adopted {
		require.Empty(t, instancePids(before[0].GetInstanceGuid(), ""), "the orphaned instance's processes stopped")
	}
	final := cs.actuals(t, guid)
	require.Len(t, final, instances)
	require.Equal(t, instances, ordinaryRunning(final))
}

// TestConvergeStrayContainer (issue 4, acceptance 4a): a container started by hand in a
// cell's containerd namespace (as `ctr run -d` would: no drover label, no BBS record;
// devstack.Containerd.RunDetached through the containerd client) is removed by
// the rep's executor on its reap interval (shortened here to 1 s), while the instance it
// runs for the BBS keeps running.
func TestConvergeStrayContainer(t *testing.T) {
	// No converger: the executor alone removes the stray container.
	cs := newCellStack(t, 1, func(_ int, c *repconfig.Config) {
		c.Executor.ReapInterval = libconfig.Duration(time.Second)
	})
	const guid = "not-alone"
	cs.desire(t, httpdLRP(guid, 1))
	instance := cs.waitRunning(t, guid, 1)[0]

	rep := cs.Reps[0]
	ns := rep.Config.Executor.ContainerdNamespace
	images, err := cs.Containerd.Images(t.Context(), ns)
	require.NoError(t, err)
	require.NotEmpty(t, images, "the cell imported its busybox image")
	// The reaper may win the race against RunDetached itself (it removes the container
	// between its creation and its task's start, and RunDetached fails); then start
	// another stray. Once RunDetached succeeded, a stray container ran in the namespace.
	var stray string
	for attempt := 1; ; attempt++ {
		stray = fmt.Sprintf("stray-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), attempt)
		err := cs.Containerd.RunDetached(ctxFor(t, settleWait), ns, images[0], stray, "/bin/sleep", "1000")
		if err == nil {
			break
		}
		require.Less(t, attempt, 5, "starting the stray container kept failing: %v", err)
		t.Logf("attempt %d: the stray container did not start (the reaper may have removed it mid-creation): %v", attempt, err)
	}

	deadline := time.Now().Add(settleWait)
	for {
		containers := cs.containersOf(t, rep)
		if !slices.Contains(containers, stray) {
			require.Len(t, containers, 1, "the instance's container stays: %v", containers)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stray container %s is still in %s after %s:\n%s", stray, ns, settleWait, rep.LogTail(20))
		}
		time.Sleep(cellPoll)
	}
	require.Contains(t, logOf(t, &rep.Service), stray, "the rep logged the removal")
	after := cs.waitRunning(t, guid, 1)[0]
	require.Equal(t, instance.GetInstanceGuid(), after.GetInstanceGuid())
	requireServesIndex(t, after)
}

// logOf returns a service's whole stdout log.
func logOf(t *testing.T, s *devstack.Service) string {
	t.Helper()
	return s.LogTail(1 << 20)
}
