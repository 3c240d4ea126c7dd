package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	convergerconfig "drover.dev/converger/config"
	"drover.dev/devstack"
	"drover.dev/devstack/devstacktest"
	libconfig "drover.dev/lib/config"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repconfig "drover.dev/rep/config"
)

// Timing of the convergence scenarios (the converger runs every
// devstacktest.ConvergeInterval).
const (
	// fastPresenceTTL and fastPresenceInterval shorten a rep's cell presence, so that a
	// killed rep's cell expires quickly.
	fastPresenceTTL      = 3 * time.Second
	fastPresenceInterval = time.Second
	// passWait bounds the wait for converger passes.
	passWait = 30 * time.Second
)

// convergeStack is a cell stack (possibly without cells) with a converger.
type convergeStack struct {
	*cellStack
}

// convergeOptions shape a convergence scenario's stack.
type convergeOptions struct {
	cells        int
	configureRep func(i int, c *repconfig.Config)
	// configureConverger may change the converger's configuration (interval already
	// devstacktest.ConvergeInterval).
	configureConverger func(c *convergerconfig.Config)
}

// newConvergeStack starts a stack with a converger and opts.cells cells.
func newConvergeStack(t *testing.T, opts convergeOptions) *convergeStack {
	t.Helper()
	configure := opts.configureConverger
	if configure == nil {
		configure = func(*convergerconfig.Config) {}
	}
	s := devstacktest.New(t, devstacktest.Options{Cells: opts.cells, ConfigureRep: opts.configureRep, ConfigureConverger: configure})
	return &convergeStack{cellStack: &cellStack{Stack: s, bbs: devstacktest.Client(t, s, 0)}}
}

// fastPresence shortens every rep's cell presence TTL and heartbeat.
func fastPresence(_ int, c *repconfig.Config) {
	c.PresenceTTL = libconfig.Duration(fastPresenceTTL)
	c.PresenceInterval = libconfig.Duration(fastPresenceInterval)
}

// status asks the BBS for the converger's status.
func (cs *convergeStack) status(t *testing.T) *bbsv1.GetConvergerStatusResponse {
	t.Helper()
	resp, err := cs.bbs.GetConvergerStatus(callCtx(t), &bbsv1.GetConvergerStatusRequest{})
	require.NoError(t, err)
	return resp
}

// waitPasses waits until the converger reported n passes whose snapshots were taken
// after the call (same machine, so the BBS's clock is ours) and returns the last; check,
// when not nil, is applied to each.
func (cs *convergeStack) waitPasses(t *testing.T, n int, check func(*bbsv1.ConvergencePass)) *bbsv1.ConvergencePass {
	t.Helper()
	after := time.Now().UnixNano()
	var last *bbsv1.ConvergencePass
	seen := 0
	deadline := time.Now().Add(passWait + time.Duration(n)*devstacktest.ConvergeInterval)
	for seen < n {
		p := cs.status(t).GetLastPass()
		if p.GetTakenAt() > after {
			after = p.GetTakenAt()
			last = p
			seen++
			require.Empty(t, p.GetError(), "converger pass failed")
			if check != nil {
				check(p)
			}
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("saw %d of %d converger passes within the deadline; last: %s", seen, n, describePass(p))
		}
		time.Sleep(cellPoll)
	}
	return last
}

// db connects to the stack's database, closed when the test ends.
func (cs *convergeStack) db(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(callCtx(t), cs.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// exec runs one SQL statement and requires it to touch want rows.
func (cs *convergeStack) exec(t *testing.T, want int64, sql string, args ...any) {
	t.Helper()
	tag, err := cs.db(t).Exec(callCtx(t), sql, args...)
	require.NoError(t, err, sql)
	require.Equal(t, want, tag.RowsAffected(), "rows touched by %s", sql)
}

// insertUnclaimedRow inserts an ORDINARY UNCLAIMED actual row behind the BBS's back.
func (cs *convergeStack) insertUnclaimedRow(t *testing.T, guid string, index int32, domain string) {
	t.Helper()
	cs.exec(t, 1, `INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, state, since, modification_tag_epoch)
		VALUES ($1, $2, $3, $4, $5, $6, 'inserted-by-test')`,
		guid, index, int16(modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY), domain,
		int16(modelsv1.ActualLRPState_ACTUAL_LRP_STATE_UNCLAIMED), time.Now().UnixNano())
}

// upsertDomain marks domain fresh for ttl (0: forever).
func (cs *convergeStack) upsertDomain(t *testing.T, domain string, ttl time.Duration) {
	t.Helper()
	_, err := cs.bbs.UpsertDomain(callCtx(t), &bbsv1.UpsertDomainRequest{Domain: domain, TtlSeconds: uint32(ttl / time.Second)})
	require.NoError(t, err)
}

// idleLRP is an LRP of no instances in domain (extra rows are added by hand); it never
// needs a cell.
func idleLRP(guid, domain string) *modelsv1.DesiredLRP {
	lrp := httpdLRP(guid, 0)
	lrp.Domain = domain
	return lrp
}

// hasIndex reports whether as holds a row of index.
func hasIndex(as []*modelsv1.ActualLRP, index int32) bool {
	for _, a := range as {
		if a.GetIndex() == index {
			return true
		}
	}
	return false
}

// ordinaryRunning counts the RUNNING ORDINARY rows.
func ordinaryRunning(as []*modelsv1.ActualLRP) int {
	n := 0
	for _, a := range as {
		if a.GetPresence() == modelsv1.ActualLRPPresence_ACTUAL_LRP_PRESENCE_ORDINARY && a.GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING {
			n++
		}
	}
	return n
}

// withPresence returns the rows of one presence.
func withPresence(as []*modelsv1.ActualLRP, p modelsv1.ActualLRPPresence) []*modelsv1.ActualLRP {
	var out []*modelsv1.ActualLRP
	for _, a := range as {
		if a.GetPresence() == p {
			out = append(out, a)
		}
	}
	return out
}

// containersOf lists the containers in the containerd namespace of rep r's cell.
func (cs *cellStack) containersOf(t *testing.T, r *devstack.Rep) []string {
	t.Helper()
	ids, err := cs.Containerd.Containers(t.Context(), r.Config.Executor.ContainerdNamespace)
	if err != nil && strings.Contains(err.Error(), "not found") {
		return nil
	}
	require.NoError(t, err)
	return ids
}

// describePass is a one-line summary of a pass for failure messages.
func describePass(p *bbsv1.ConvergencePass) string {
	return fmt.Sprintf("taken_at %d paused %v missing %d extra %d retired %d kept_stale %d kept_paused %d suspect_running %d error %q",
		p.GetTakenAt(), p.GetPaused(), p.GetMissing(), p.GetExtra(), p.GetRetired(), p.GetKeptStale(), p.GetKeptPaused(),
		p.GetSuspectRunning(), p.GetError())
}
