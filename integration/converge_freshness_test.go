package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Domains of the freshness scenarios (each test has its own database).
const (
	freshDomain = "fresh"
	staleDomain = "stale"
	// keptPasses is how many passes an extra row must survive to count as kept.
	keptPasses = 3
)

// TestConvergeExtraRowFreshness (issue 4, acceptance 4b): an extra actual row (index ≥
// instances, inserted by SQL) is retired in a fresh domain; in a domain that is not
// fresh it is kept across several passes (reported as kept_stale), and retired once the
// domain is made fresh. The LRPs have no instances, so no cell is needed.
func TestConvergeExtraRowFreshness(t *testing.T) {
	cs := newConvergeStack(t, convergeOptions{})
	const freshGuid, staleGuid = "extra-in-fresh", "extra-in-stale"
	cs.upsertDomain(t, freshDomain, 0)
	cs.desire(t, idleLRP(freshGuid, freshDomain))
	cs.desire(t, idleLRP(staleGuid, staleDomain))

	cs.insertUnclaimedRow(t, freshGuid, 0, freshDomain)
	cs.waitActuals(t, freshGuid, passWait, "the extra row in the fresh domain retired", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 0
	})

	cs.insertUnclaimedRow(t, staleGuid, 0, staleDomain)
	cs.waitPasses(t, keptPasses, func(p *bbsv1.ConvergencePass) {
		require.NotContains(t, p.GetFreshDomains(), staleDomain)
		require.GreaterOrEqual(t, p.GetKeptStale(), int32(1), "pass kept the stale extra: %s", describePass(p))
		require.True(t, hasIndex(cs.actuals(t, staleGuid), 0), "the extra row of the stale domain is kept")
	})

	cs.upsertDomain(t, staleDomain, 0)
	cs.waitActuals(t, staleGuid, passWait, "the extra row retired once its domain is fresh", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 0
	})
}

// TestConvergePause (issue 4, acceptance 7): while the converger is paused an extra
// instance in a fresh domain is not retired, pass after pass (kept_paused), and the
// status says paused with the reason; after resume it is retired.
func TestConvergePause(t *testing.T) {
	cs := newConvergeStack(t, convergeOptions{})
	const guid = "extra-while-paused"
	const reason = "restoring desired state after an incident"
	cs.upsertDomain(t, freshDomain, 0)
	cs.desire(t, idleLRP(guid, freshDomain))

	resp, err := cs.bbs.SetConvergerPaused(callCtx(t), &bbsv1.SetConvergerPausedRequest{Paused: true, Reason: reason})
	require.NoError(t, err)
	require.True(t, resp.GetStatus().GetPaused())
	st := cs.status(t)
	require.True(t, st.GetPaused())
	require.Equal(t, reason, st.GetPausedReason())
	require.NotZero(t, st.GetChangedAt())

	cs.insertUnclaimedRow(t, guid, 0, freshDomain)
	cs.waitPasses(t, keptPasses, func(p *bbsv1.ConvergencePass) {
		require.True(t, p.GetPaused(), "pass while paused: %s", describePass(p))
		require.GreaterOrEqual(t, p.GetKeptPaused(), int32(1), "pass kept the extra: %s", describePass(p))
		require.True(t, hasIndex(cs.actuals(t, guid), 0), "the extra row is kept while paused")
	})

	resp, err = cs.bbs.SetConvergerPaused(callCtx(t), &bbsv1.SetConvergerPausedRequest{Paused: false})
	require.NoError(t, err)
	require.False(t, resp.GetStatus().GetPaused())
	cs.waitActuals(t, guid, passWait, "the extra row retired after resume", func(as []*modelsv1.ActualLRP) bool {
		return len(as) == 0
	})
	require.False(t, cs.status(t).GetPaused())
}
