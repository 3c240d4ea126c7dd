package integration

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/devstack"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repconfig "drover.dev/rep/config"
)

// TestEvacuateKeepsInstancesServing (issue 4, acceptance 6; cell.md §2.8): a routed LRP
// runs 4 instances, 2 on each of 2 cells. Evacuate on cell-1's rep drains it: sampled
// every drainSamplePeriod until the rep exits, at least 3 indices are RUNNING (ORDINARY,
// or EVACUATING on cell-1) and answer on their host port. The rep exits 0; at that
// moment all 4 run ORDINARY on cell-2, no EVACUATING row is left, cell-1's presence is
// gone and it left nothing on the host.
func TestEvacuateKeepsInstancesServing(t *testing.T) {
	cs := newCellStack(t, 2, func(_ int, c *repconfig.Config) { fastEvacuation(c, false) })
	leaving, staying := cs.Reps[0], cs.Reps[1]
	owned := takeOverRep(t, leaving)

	const guid = "evacuate-routed"
	const instances = 4
	cs.desire(t, routedHTTPLRP(t, guid, instances))
	before := runningValues(cs.waitRunning(t, guid, instances))
	require.Equal(t, map[string]int{leaving.CellID(): 2, staying.CellID(): 2}, countByCell(before), "placement spreads the instances")
	for _, a := range before {
		requireServesIndex(t, a)
	}

	began := time.Now()
	cs.evacuateCell(t, leaving)
	report := cs.watchDrain(t, guid, owned, began, instances-1)
	require.Equal(t, 0, owned.exitCode(t, settleWait), "exit code of %s after the drain", leaving.Name)
	t.Logf("drain took %s", time.Since(began).Round(time.Millisecond))
	require.NotZero(t, report.evacuatingSeen, "no EVACUATING row was seen while %s drained", leaving.CellID())
	require.NotZero(t, report.evacuatingServed, "no EVACUATING instance answered on its host port while %s drained", leaving.CellID())

	requireEvacuated(t, cs, guid, instances, leaving, staying)
	cs.removeAndWaitClean(t, guid)
}

// TestEvacuateOnSigterm: a rep with evacuate_on_sigterm drains on SIGTERM: of an LRP with
// one instance on each of 2 cells, the instance on cell-1 moves to cell-2 while both
// indices keep serving, and the rep exits 0.
func TestEvacuateOnSigterm(t *testing.T) {
	cs := newCellStack(t, 2, func(i int, c *repconfig.Config) { fastEvacuation(c, i == 1) })
	leaving, staying := cs.Reps[0], cs.Reps[1]
	owned := takeOverRep(t, leaving)

	const guid = "evacuate-on-sigterm"
	const instances = 2
	cs.desire(t, routedHTTPLRP(t, guid, instances))
	before := runningValues(cs.waitRunning(t, guid, instances))
	require.Equal(t, map[string]int{leaving.CellID(): 1, staying.CellID(): 1}, countByCell(before), "placement spreads the instances")
	var moving *modelsv1.ActualLRP
	for _, a := range before {
		if a.GetCellId() == leaving.CellID() {
			moving = a
		}
	}

	began := time.Now()
	owned.signal(t, syscall.SIGTERM)
	cs.watchDrain(t, guid, owned, began, instances)
	require.Equal(t, 0, owned.exitCode(t, settleWait), "exit code of %s after SIGTERM", leaving.Name)

	after := requireEvacuated(t, cs, guid, instances, leaving, staying)
	for _, a := range after {
		if a.GetIndex() == moving.GetIndex() {
			require.NotEqual(t, moving.GetInstanceGuid(), a.GetInstanceGuid(), "index %d runs a new instance", a.GetIndex())
		}
	}
	cs.removeAndWaitClean(t, guid)
}

// requireEvacuated requires, right after leaving's rep exited, instances RUNNING
// ORDINARY rows of guid, all on staying and serving, no EVACUATING row, no presence of
// leaving's cell and nothing of it on the host; it returns the rows.
func requireEvacuated(t *testing.T, cs *cellStack, guid string, instances int, leaving, staying *devstack.Rep) []*modelsv1.ActualLRP {
	t.Helper()
	after := cs.actuals(t, guid)
	rows := describeDrainRows(after)
	require.Len(t, after, instances, "rows of %s once %s exited:\n%s", guid, leaving.Name, rows)
	require.Equal(t, instances, ordinaryRunning(after), "RUNNING ORDINARY rows once %s exited:\n%s", leaving.Name, rows)
	require.Equal(t, map[string]int{staying.CellID(): instances}, countByCell(after), "cells once %s exited:\n%s", leaving.Name, rows)
	require.Empty(t, withPresence(after, modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_EVACUATING), "EVACUATING rows once %s exited", leaving.Name)
	for _, a := range after {
		requireServesIndex(t, a)
	}
	require.NotContains(t, cs.liveCells(t), leaving.CellID(), "the evacuated cell's presence")
	cs.requireCellClean(t, leaving)
	return after
}
